package ipc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("ipc: server closed")

// Backend is what the server serves; the daemon adapts the engine to it.
// Errors should be *Error (or wrap one) so that they reach clients with their code.
type Backend interface {
	// Submit starts a request; ctx ends with the connection.
	Submit(ctx context.Context, p Peer, s *Submit) (RequestStream, error)
	// Cancel cancels requestID for p; admin may cancel anyone's.
	Cancel(p Peer, requestID uint64, admin bool) error
	Stats() map[string]any
	Health() Health
}

// RequestStream yields a request's events; it always ends with a Done.
type RequestStream interface {
	RequestID() uint64
	PromptTokens() []int
	// Next blocks for the next event. Deltas that piled up are merged.
	Next(ctx context.Context) (Event, error)
}

// Event is a text delta, or the terminal Done.
type Event struct {
	Text   string
	Tokens []int
	Done   *Done
}

// Options configure a Server.
type Options struct {
	Backend      Backend
	Logger       *slog.Logger
	MaxFrame     int           // default DefaultMaxFrame
	WriteTimeout time.Duration // a client that takes longer to read a frame is dropped; default 30s
	Version      string        // server version for hello
	Model        string        // model name for hello
	Policy       Policy
}

// Server serves the protocol on Unix sockets, like net/http.Server: Serve,
// Shutdown (stop accepting, drain, close) and Close.
type Server struct {
	backend  Backend
	log      *slog.Logger
	maxFrame int
	wtimeout time.Duration
	version  string
	model    string
	policy   atomic.Pointer[Policy]
	peerCred func(net.Conn) (Peer, error) // tests swap in fake peers

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	inflight  map[uint32]int // per uid
	closed    bool
	lastBusy  time.Time // when the last connection or request ended
	wg        sync.WaitGroup
}

// NewServer returns a server; call Serve.
func NewServer(o Options) *Server {
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{backend: o.Backend, log: o.Logger.With("component", "ipc"), maxFrame: o.MaxFrame,
		wtimeout: o.WriteTimeout, version: o.Version, model: o.Model, peerCred: peerCred,
		listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{}, inflight: map[uint32]int{},
		lastBusy: time.Now()}
	pol := o.Policy
	s.policy.Store(&pol)
	return s
}

// SetPolicy replaces the access policy; it applies to new connections and
// to every request from then on.
func (s *Server) SetPolicy(p Policy) { s.policy.Store(&p) }

// Serve accepts connections on ln until Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			delete(s.listeners, ln)
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.serveConn(c)
	}
}

// Idle reports whether no connection is open and since when.
func (s *Server) Idle() (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns) == 0, s.lastBusy
}

// Shutdown stops accepting, waits for requests in flight to end (the
// backend drains them), then closes every connection. If ctx ends first it
// closes them anyway and returns ctx.Err().
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		busy := 0
		for _, n := range s.inflight {
			busy += n
		}
		s.mu.Unlock()
		if busy == 0 {
			return s.Close()
		}
		select {
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close closes listeners and connections at once; their requests are cancelled.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) serveConn(nc net.Conn) {
	peer, err := s.peerCred(nc)
	if err != nil {
		s.log.Warn("peer credentials unavailable", "err", err)
		nc.Close()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{s: s, c: nc, peer: peer, ctx: ctx, cancel: cancel, w: bufio.NewWriter(nc), reqs: map[uint64]uint64{}}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		cancel()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go c.serve()
}

// conn is one client connection: a reader goroutine, and a pump goroutine
// per request writing its events.
type conn struct {
	s      *Server
	c      net.Conn
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
	if err := WriteFrame(c.w, v); err == nil {
		err = c.w.Flush()
		if err == nil {
			return
		}
	}
	c.c.Close() // a client that cannot take its frames is dropped; its requests end
}

func (c *conn) sendErr(id uint64, err error) {
	e := AsError(err)
	c.send(&ErrorFrame{Type: TypeError, ID: id, Code: e.Code, Message: e.Message})
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
		s.mu.Lock()
		delete(s.conns, c)
		s.lastBusy = time.Now()
		s.mu.Unlock()
		s.wg.Done()
	}()
	log := s.log.With("uid", c.peer.UID, "pid", c.peer.PID)
	if !s.policy.Load().Allowed(c.peer) {
		log.Warn("connection refused: uid not allowed")
		c.refuse(0, Errorf(CodePermissionDenied, "uid %d is not allowed to use this socket", c.peer.UID))
		return
	}
	br := bufio.NewReader(c.c)
	hello := false
	for {
		body, err := ReadFrame(br, s.maxFrame)
		if err != nil {
			if errors.Is(err, ErrFrameTooLarge) {
				c.refuse(0, Errorf(CodeInvalidArgument, "%v", err))
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				log.Debug("connection read failed", "err", err)
			}
			return
		}
		h, err := DecodeHeader(body)
		if err != nil {
			c.sendErr(0, Errorf(CodeInvalidArgument, "bad frame: %v", err))
			continue
		}
		if !hello {
			if h.Type != TypeHello {
				c.refuse(h.ID, Errorf(CodeInvalidArgument, "the first frame must be hello, got %q", h.Type))
				return
			}
			var m Hello
			if err := Decode(body, &m); err != nil || m.Version != ProtocolVersion {
				c.refuse(h.ID, Errorf(CodeInvalidArgument, "protocol version %d not supported (server speaks %d)",
					m.Version, ProtocolVersion))
				return
			}
			hello = true
			c.send(&Hello{Type: TypeHello, ID: h.ID, Version: ProtocolVersion, Server: s.version, Model: s.model, UID: c.peer.UID})
			continue
		}
		c.dispatch(h, body)
	}
}

func (c *conn) dispatch(h Header, body []byte) {
	switch h.Type {
	case TypeSubmit:
		var m Submit
		if err := Decode(body, &m); err != nil {
			c.sendErr(h.ID, Errorf(CodeInvalidArgument, "submit: %v", err))
			return
		}
		c.submit(&m)
	case TypeCancel:
		var m Cancel
		if err := Decode(body, &m); err != nil {
			c.sendErr(h.ID, Errorf(CodeInvalidArgument, "cancel: %v", err))
			return
		}
		c.cancelReq(&m)
	case TypeStats:
		if !c.s.policy.Load().Allowed(c.peer) {
			c.sendErr(h.ID, ErrPermissionDenied)
			return
		}
		c.send(&Stats{Type: TypeStats, ID: h.ID, Stats: c.s.backend.Stats()})
	case TypeHealth:
		hl := c.s.backend.Health()
		hl.Type, hl.ID = TypeHealth, h.ID
		c.send(&hl)
	default:
		c.sendErr(h.ID, Errorf(CodeInvalidArgument, "unknown message type %q", h.Type))
	}
}

func (c *conn) submit(m *Submit) {
	s := c.s
	pol := s.policy.Load()
	if !pol.Allowed(c.peer) {
		c.sendErr(m.ID, Errorf(CodePermissionDenied, "uid %d is no longer allowed", c.peer.UID))
		return
	}
	c.mu.Lock()
	_, dup := c.reqs[m.ID]
	c.mu.Unlock()
	if dup {
		c.sendErr(m.ID, Errorf(CodeInvalidArgument, "id %d is already in flight on this connection", m.ID))
		return
	}
	s.mu.Lock()
	if pol.MaxRequestsPerUser > 0 && s.inflight[c.peer.UID] >= pol.MaxRequestsPerUser {
		s.mu.Unlock()
		c.sendErr(m.ID, Errorf(CodeResourceExhausted, "uid %d has %d requests in flight (limit %d)",
			c.peer.UID, pol.MaxRequestsPerUser, pol.MaxRequestsPerUser))
		return
	}
	s.inflight[c.peer.UID]++
	s.mu.Unlock()
	st, err := s.backend.Submit(c.ctx, c.peer, m)
	if err != nil {
		c.release()
		c.sendErr(m.ID, err)
		return
	}
	c.mu.Lock()
	c.reqs[m.ID] = st.RequestID()
	c.mu.Unlock()
	c.send(&Accepted{Type: TypeAccepted, ID: m.ID, RequestID: st.RequestID()})
	c.pumps.Add(1)
	go c.pump(m.ID, m.Stream, st)
}

func (c *conn) release() {
	c.s.mu.Lock()
	c.s.inflight[c.peer.UID]--
	if c.s.inflight[c.peer.UID] <= 0 {
		delete(c.s.inflight, c.peer.UID)
	}
	c.s.lastBusy = time.Now()
	c.s.mu.Unlock()
}

// pump writes one request's events. It reads to the terminal event even if
// the connection is gone: the engine ends the request, and nothing leaks.
func (c *conn) pump(id uint64, stream bool, st RequestStream) {
	defer c.pumps.Done()
	defer c.release()
	var text strings.Builder
	var toks []int
	for {
		ev, err := st.Next(context.Background())
		if err != nil {
			c.sendErr(id, Errorf(CodeInternal, "stream: %v", err))
			return
		}
		if ev.Done == nil {
			if stream {
				c.send(&Token{Type: TypeToken, ID: id, Text: ev.Text, Tokens: ev.Tokens})
			} else {
				text.WriteString(ev.Text)
				toks = append(toks, ev.Tokens...)
			}
			continue
		}
		c.mu.Lock()
		delete(c.reqs, id)
		c.mu.Unlock()
		d := ev.Done
		d.Type, d.ID = TypeDone, id
		if !stream {
			d.Text, d.Tokens, d.PromptTokens = text.String(), toks, st.PromptTokens()
		}
		c.send(d)
		return
	}
}

func (c *conn) cancelReq(m *Cancel) {
	pol := c.s.policy.Load()
	rid := m.RequestID
	own := false
	if m.Target != 0 {
		c.mu.Lock()
		r, ok := c.reqs[m.Target]
		c.mu.Unlock()
		if !ok {
			c.sendErr(m.ID, Errorf(CodeNotFound, "no request with id %d in flight on this connection", m.Target))
			return
		}
		rid, own = r, true
	}
	if rid == 0 {
		c.sendErr(m.ID, Errorf(CodeInvalidArgument, "cancel needs a target or a request_id"))
		return
	}
	if err := c.s.backend.Cancel(c.peer, rid, own || pol.Admin(c.peer)); err != nil {
		c.sendErr(m.ID, err)
		return
	}
	c.send(&Cancelled{Type: TypeCancelled, ID: m.ID, RequestID: rid})
}

// String describes a peer for logs.
func (p Peer) String() string { return fmt.Sprintf("uid=%d gid=%d pid=%d", p.UID, p.GID, p.PID) }
