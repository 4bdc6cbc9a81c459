package ipc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/batchd/batchd/ipc/wire"
)

// conn is one client connection: a reader goroutine, and a pump goroutine
// per request writing its events.
type conn struct {
	s      *Server
	c      net.Conn
	slot   *Slot // in the connection budget: pending until hello
	peer   Peer
	ctx    context.Context
	cancel context.CancelFunc
	wmu    sync.Mutex
	w      *bufio.Writer
	mu     sync.Mutex
	reqs   map[uint64]uint64 // client id -> request id, while in flight
	pumps  sync.WaitGroup
}

func (c *conn) send(v any) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(c.s.wtimeout))
	if err := wire.WriteFrame(c.w, v); err == nil {
		err = c.w.Flush()
		if err == nil {
			return
		}
	}
	c.c.Close() // a client that cannot take its frames is dropped; its requests end
}

// evicted is the budget closing this connection, still without a hello,
// to make room for a newer one: it says why, briefly, and hangs up.
func (c *conn) evicted() {
	go func() {
		c.wmu.Lock()
		_ = c.c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if wire.WriteFrame(c.w, &wire.ErrorFrame{Type: wire.TypeError, Code: wire.CodeResourceExhausted,
			Message: "closed to make room: too many connections waiting to say hello"}) == nil {
			_ = c.w.Flush()
		}
		c.wmu.Unlock()
		c.c.Close()
	}()
}

func (c *conn) sendErr(id uint64, err error) {
	e := wire.AsError(err)
	c.send(&wire.ErrorFrame{Type: wire.TypeError, ID: id, Code: e.Code, Message: e.Message})
}

// refuse sends a final error and hangs up gently: it shuts down its write
// side and discards what the client still sends for a moment, so that a
// client busy writing its hello reads the reason instead of EPIPE.
func (c *conn) refuse(id uint64, err error) {
	c.sendErr(id, err)
	if uc, ok := c.c.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
		_ = uc.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = io.Copy(io.Discard, io.LimitReader(uc, int64(c.s.maxFrame)))
	}
}

func (c *conn) serve() {
	s := c.s
	defer func() {
		c.cancel()
		c.pumps.Wait()
		c.c.Close()
		c.slot.Release()
		s.mu.Lock()
		delete(s.conns, c)
		s.lastBusy = time.Now()
		s.mu.Unlock()
		s.wg.Done()
	}()
	log := s.log.With("uid", c.peer.UID, "pid", c.peer.PID)
	if !s.policy.Load().Allowed(c.peer) {
		if n, ok := s.warn.allow(fmt.Sprintf("refused uid %d", c.peer.UID)); ok {
			log.Warn("connection refused: uid not allowed", "repeats", n)
		}
		c.refuse(0, wire.Errorf(wire.CodePermissionDenied, "uid %d is not allowed to use this socket", c.peer.UID))
		return
	}
	br := bufio.NewReader(c.c)
	hello := false
	// The whole hello, however slowly it trickles in, is due by this.
	_ = c.c.SetReadDeadline(time.Now().Add(s.helloTO))
	for {
		body, err := wire.ReadFrame(br, s.maxFrame)
		if err != nil {
			var ne net.Error
			if !hello && errors.As(err, &ne) && ne.Timeout() {
				c.sendErr(0, wire.Errorf(wire.CodeInvalidArgument, "no hello within %v", s.helloTO))
				return
			}
			if errors.Is(err, wire.ErrFrameTooLarge) {
				c.refuse(0, wire.Errorf(wire.CodeInvalidArgument, "%v", err))
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				log.Debug("connection read failed", "err", err)
			}
			return
		}
		h, err := wire.DecodeHeader(body)
		if err != nil {
			c.sendErr(0, wire.Errorf(wire.CodeInvalidArgument, "bad frame: %v", err))
			continue
		}
		if !hello {
			if h.Type != wire.TypeHello {
				c.refuse(h.ID, wire.Errorf(wire.CodeInvalidArgument, "the first frame must be hello, got %q", h.Type))
				return
			}
			var m wire.Hello
			if err := wire.Decode(body, &m); err != nil || m.Version != wire.ProtocolVersion {
				c.refuse(h.ID, wire.Errorf(wire.CodeInvalidArgument, "protocol version %d not supported (server speaks %d)",
					m.Version, wire.ProtocolVersion))
				return
			}
			if err := c.slot.Authenticate(c.peer.UID); err != nil {
				c.refuse(h.ID, err)
				return
			}
			hello = true
			_ = c.c.SetReadDeadline(time.Time{})
			c.send(&wire.Hello{Type: wire.TypeHello, ID: h.ID, Version: wire.ProtocolVersion, Server: s.version, Model: s.model, UID: c.peer.UID})
			continue
		}
		c.dispatch(h, body)
	}
}

// guard runs f and turns a panic in it into an internal error, logged with
// its stack: no request's content, however it trips a bug, ends the
// process or the connection's other requests.
func (s *Server) guard(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic serving a request", "what", what, "panic", r, "stack", string(debug.Stack()))
			err = wire.Errorf(wire.CodeInternal, "%s: internal error (logged by the daemon)", what)
		}
	}()
	return f()
}

func (c *conn) dispatch(h wire.Header, body []byte) {
	if err := c.s.guard(h.Type, func() error { c.handle(h, body); return nil }); err != nil {
		c.sendErr(h.ID, err)
	}
}

func (c *conn) handle(h wire.Header, body []byte) {
	switch h.Type {
	case wire.TypeSubmit:
		var m wire.Submit
		if err := wire.Decode(body, &m); err != nil {
			c.sendErr(h.ID, decodeErr("submit", err))
			return
		}
		c.submit(&m)
	case wire.TypeCancel:
		var m wire.Cancel
		if err := wire.Decode(body, &m); err != nil {
			c.sendErr(h.ID, decodeErr("cancel", err))
			return
		}
		c.cancelReq(&m)
	case wire.TypeStats:
		if !c.s.policy.Load().Allowed(c.peer) {
			c.sendErr(h.ID, wire.ErrPermissionDenied)
			return
		}
		c.send(&wire.Stats{Type: wire.TypeStats, ID: h.ID, Stats: ownView(c.s.backend.Stats(), c.peer, c.s.policy.Load())})
	case wire.TypeReload:
		c.reload(h.ID)
	case wire.TypeModels, wire.TypePS:
		if !c.s.policy.Load().Allowed(c.peer) {
			c.sendErr(h.ID, wire.ErrPermissionDenied)
			return
		}
		m := &wire.Models{Type: h.Type, ID: h.ID}
		if ml, ok := c.s.backend.(ModelLister); ok {
			for _, e := range ml.Models() {
				if h.Type == wire.TypeModels || e.State == "loaded" {
					m.Models = append(m.Models, e)
				}
			}
		}
		c.send(m)
	case wire.TypeEmbed:
		var m wire.Embed
		if err := wire.Decode(body, &m); err != nil {
			c.sendErr(h.ID, decodeErr("embed", err))
			return
		}
		c.embed(&m)
	case wire.TypeRerank:
		var m wire.Rerank
		if err := wire.Decode(body, &m); err != nil {
			c.sendErr(h.ID, decodeErr("rerank", err))
			return
		}
		c.rerank(&m)
	case wire.TypeWarm:
		var m wire.Warm
		if err := wire.Decode(body, &m); err != nil {
			c.sendErr(h.ID, decodeErr("warm", err))
			return
		}
		c.warm(&m)
	case wire.TypeLoad, wire.TypeUnload:
		var m wire.Load
		if err := wire.Decode(body, &m); err != nil {
			c.sendErr(h.ID, decodeErr(h.Type, err))
			return
		}
		c.load(h.Type, &m)
	case wire.TypeHealth:
		hl := c.s.backend.Health()
		hl.Type, hl.ID = wire.TypeHealth, h.ID
		c.send(&hl)
	default:
		c.sendErr(h.ID, wire.Errorf(wire.CodeInvalidArgument, "unknown message type %q", h.Type))
	}
}

func (c *conn) submit(m *wire.Submit) {
	s := c.s
	pol := s.policy.Load()
	if !pol.Allowed(c.peer) {
		c.sendErr(m.ID, wire.Errorf(wire.CodePermissionDenied, "uid %d is no longer allowed", c.peer.UID))
		return
	}
	c.mu.Lock()
	_, dup := c.reqs[m.ID]
	c.mu.Unlock()
	if dup {
		c.sendErr(m.ID, wire.Errorf(wire.CodeInvalidArgument, "id %d is already in flight on this connection", m.ID))
		return
	}
	t, err := turnOf(s.stored, c.peer.UID, m)
	if err != nil {
		c.sendErr(m.ID, err)
		return
	}
	if err := s.AcquireUser(c.peer); err != nil {
		c.sendErr(m.ID, err)
		return
	}
	var st RequestStream
	err = s.guard("submit", func() (err error) {
		st, err = s.backend.Submit(c.ctx, c.peer, m)
		return err
	})
	if err != nil {
		c.release()
		c.sendErr(m.ID, err)
		return
	}
	c.mu.Lock()
	c.reqs[m.ID] = st.RequestID()
	c.mu.Unlock()
	c.send(&wire.Accepted{Type: wire.TypeAccepted, ID: m.ID, RequestID: st.RequestID()})
	c.pumps.Add(1)
	go c.pump(m.ID, m.Stream, st, t)
}

func (c *conn) release() { c.s.ReleaseUser(c.peer) }

// AcquireUser counts a request of p's uid in flight, or refuses it with
// resource_exhausted at the policy's per-user cap. Other front ends (the
// HTTP API) call it too, so that the cap holds across them.
func (s *Server) AcquireUser(p Peer) error {
	pol := s.policy.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if pol.MaxRequestsPerUser > 0 && s.inflight[p.UID] >= pol.MaxRequestsPerUser {
		return wire.Errorf(wire.CodeResourceExhausted, "uid %d has %d requests in flight (limit %d)",
			p.UID, pol.MaxRequestsPerUser, pol.MaxRequestsPerUser)
	}
	s.inflight[p.UID]++
	return nil
}

// ReleaseUser ends what AcquireUser counted.
func (s *Server) ReleaseUser(p Peer) {
	s.mu.Lock()
	s.inflight[p.UID]--
	if s.inflight[p.UID] <= 0 {
		delete(s.inflight, p.UID)
	}
	s.lastBusy = time.Now()
	s.mu.Unlock()
}

// Policy returns the access policy in force.
func (s *Server) Policy() *Policy { return s.policy.Load() }

// pump writes one request's events. It reads to the terminal event even if
// the connection is gone: the engine ends the request, and nothing leaks.
// t (or nil) stores the conversation once its answer is whole.
func (c *conn) pump(id uint64, stream bool, st RequestStream, t *turn) {
	defer c.pumps.Done()
	released := false
	defer func() {
		if !released {
			c.release()
		}
	}()
	var text, reasoning strings.Builder
	var toks []int
	var lps []wire.Logprob
	for {
		var ev Event
		err := c.s.guard("stream", func() (err error) {
			ev, err = st.Next(context.Background())
			return err
		})
		if err != nil {
			// The request may still run: it must not outlive its reader.
			_ = c.s.backend.Cancel(c.peer, st.RequestID(), true)
			c.mu.Lock()
			delete(c.reqs, id)
			c.mu.Unlock()
			c.sendErr(id, wire.Errorf(wire.CodeInternal, "stream: %v", wire.AsError(err).Message))
			return
		}
		if t != nil {
			t.add(ev)
		}
		if ev.Done == nil {
			if stream {
				c.send(&wire.Token{Type: wire.TypeToken, ID: id, Text: ev.Text, Tokens: ev.Tokens, Logprobs: ev.Logprobs,
					Reasoning: ev.Reasoning, ToolCalls: ev.ToolCalls})
			} else {
				text.WriteString(ev.Text)
				reasoning.WriteString(ev.Reasoning)
				toks = append(toks, ev.Tokens...)
				lps = append(lps, ev.Logprobs...)
			}
			continue
		}
		c.mu.Lock()
		delete(c.reqs, id)
		c.mu.Unlock()
		d := ev.Done
		d.Type, d.ID = wire.TypeDone, id
		if !stream {
			d.Text, d.Tokens, d.PromptTokens, d.Logprobs = text.String(), toks, st.PromptTokens(), lps
			d.Reasoning = reasoning.String()
		}
		if t != nil {
			t.done(d)
		}
		// The slot is free before the client hears: a client that submits
		// again the moment it has its answer is not over its cap. Shutdown
		// still waits for the frame (writing).
		c.s.mu.Lock()
		c.s.writing++
		c.s.mu.Unlock()
		c.release()
		released = true
		c.send(d)
		c.s.mu.Lock()
		c.s.writing--
		c.s.mu.Unlock()
		return
	}
}

func (c *conn) cancelReq(m *wire.Cancel) {
	pol := c.s.policy.Load()
	rid := m.RequestID
	own := false
	if m.Target != 0 {
		c.mu.Lock()
		r, ok := c.reqs[m.Target]
		c.mu.Unlock()
		if !ok {
			c.sendErr(m.ID, wire.Errorf(wire.CodeNotFound, "no request with id %d in flight on this connection", m.Target))
			return
		}
		rid, own = r, true
	}
	if rid == 0 {
		c.sendErr(m.ID, wire.Errorf(wire.CodeInvalidArgument, "cancel needs a target or a request_id"))
		return
	}
	if err := c.s.backend.Cancel(c.peer, rid, own || pol.Admin(c.peer)); err != nil {
		c.sendErr(m.ID, err)
		return
	}
	c.send(&wire.Cancelled{Type: wire.TypeCancelled, ID: m.ID, RequestID: rid})
}

// ownView is what a peer may see of the stats: an admin every request in
// flight, anyone else their own (who runs what, and how long, is other
// users' business).
func ownView(r *wire.StatsReport, p Peer, pol *Policy) *wire.StatsReport {
	if r == nil || pol.Admin(p) {
		return r
	}
	out := *r
	out.Requests = nil
	for _, q := range r.Requests {
		if q.UID == p.UID {
			out.Requests = append(out.Requests, q)
		}
	}
	return &out
}

// decodeErr reports a frame that did not decode, keeping its code.
func decodeErr(what string, err error) *wire.Error {
	e := wire.AsError(err)
	return &wire.Error{Code: wire.CodeInvalidArgument, Message: what + ": " + e.Message}
}

// String describes a peer for logs.
func (p Peer) String() string { return fmt.Sprintf("uid=%d gid=%d pid=%d", p.UID, p.GID, p.PID) }

// embed computes embeddings, as a request of the user (counted).
func (c *conn) embed(m *wire.Embed) {
	eb, ok := c.s.backend.(Embedder)
	c.userCall(m.ID, ok, "embed: this server computes no embeddings", func() (any, error) {
		res, err := eb.Embed(c.ctx, c.peer, m)
		if err == nil {
			res.Type, res.ID = wire.TypeEmbed, m.ID
		}
		return res, err
	})
}

// rerank scores documents, as a request of the user (counted).
func (c *conn) rerank(m *wire.Rerank) {
	rr, ok := c.s.backend.(Reranker)
	c.userCall(m.ID, ok, "rerank: this server reranks nothing", func() (any, error) {
		res, err := rr.Rerank(c.ctx, c.peer, m)
		if err == nil {
			res.Type, res.ID = wire.TypeRerank, m.ID
		}
		return res, err
	})
}

// warm prefills into the prefix cache, as a request of the user (counted).
func (c *conn) warm(m *wire.Warm) {
	wm, ok := c.s.backend.(Warmer)
	c.userCall(m.ID, ok, "warm: this server has no prefix cache to warm", func() (any, error) {
		res, err := wm.Warm(c.ctx, c.peer, m)
		if err == nil {
			res.Type, res.ID = wire.TypeWarm, m.ID
		}
		return res, err
	})
}

// userCall runs do as a request of the user (counted), once the policy
// admits the peer and the backend serves the operation (served; else
// unavailable, saying unserved).
func (c *conn) userCall(id uint64, served bool, unserved string, do func() (any, error)) {
	switch {
	case !c.s.policy.Load().Allowed(c.peer):
		c.sendErr(id, wire.ErrPermissionDenied)
	case !served:
		c.sendErr(id, wire.Errorf(wire.CodeUnavailable, "%s", unserved))
	default:
		c.counted(id, do)
	}
}

// counted runs do in its own goroutine, counted against the user's cap
// like a request, and sends its reply or error; the connection's end
// cancels it (c.ctx).
func (c *conn) counted(id uint64, do func() (any, error)) {
	if err := c.s.AcquireUser(c.peer); err != nil {
		c.sendErr(id, err)
		return
	}
	c.pumps.Add(1)
	go func() {
		defer c.pumps.Done()
		var res any
		err := c.s.guard("request", func() (err error) {
			res, err = do()
			return err
		})
		c.release()
		if err != nil {
			c.sendErr(id, err)
			return
		}
		c.send(res)
	}()
}

// load loads or unloads a model, in its own goroutine: a load may take
// long, and the connection's other frames go on meanwhile. It counts
// against the user's cap as a request does, and the connection's end
// cancels it.
func (c *conn) load(typ string, m *wire.Load) {
	if !c.s.policy.Load().Allowed(c.peer) {
		c.sendErr(m.ID, wire.ErrPermissionDenied)
		return
	}
	ml, ok := c.s.backend.(ModelLoader)
	if !ok {
		c.sendErr(m.ID, wire.Errorf(wire.CodeUnavailable, "%s: this server serves one model", typ))
		return
	}
	c.counted(m.ID, func() (any, error) {
		if err := ml.LoadModel(c.ctx, c.peer, m.Model, m.KeepAlive, typ == wire.TypeUnload); err != nil {
			return nil, err
		}
		return &wire.Load{Type: typ, ID: m.ID, Model: m.Model}, nil
	})
}

func (c *conn) reload(id uint64) {
	pol := c.s.policy.Load()
	if !pol.Allowed(c.peer) || !pol.Admin(c.peer) {
		c.sendErr(id, wire.Errorf(wire.CodePermissionDenied, "reload: uid %d is not an admin (server.admin_users)", c.peer.UID))
		return
	}
	r, ok := c.s.backend.(Reloader)
	if !ok {
		c.sendErr(id, wire.Errorf(wire.CodeUnavailable, "reload: this server cannot reload"))
		return
	}
	res, err := r.Reload(c.peer)
	if err != nil {
		c.sendErr(id, err)
		return
	}
	res.Type, res.ID = wire.TypeReload, id
	c.send(res)
}
