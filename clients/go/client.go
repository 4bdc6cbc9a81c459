// Package client is the Go client of the batchd daemon: Dial the Unix
// socket, then Generate (whole result or streamed), Cancel, Stats and Health,
// many requests at once on one connection. Errors from the daemon are
// *wire.Error values that match the sentinels below with errors.Is.
package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/batchd/batchd/ipc/wire"
)

// DefaultSocket is where the daemon listens unless BATCHD_SOCKET says otherwise.
const DefaultSocket = "/run/batchd/batchd.sock"

// Error sentinels, for errors.Is on what the daemon returns.
var (
	ErrInvalidArgument   = wire.ErrInvalidArgument
	ErrNotFound          = wire.ErrNotFound
	ErrPermissionDenied  = wire.ErrPermissionDenied
	ErrResourceExhausted = wire.ErrResourceExhausted
	ErrQueueFull         = wire.ErrQueueFull
	ErrUnavailable       = wire.ErrUnavailable
	ErrInternal          = wire.ErrInternal
)

// ErrClosed is returned for calls on a closed client or a lost connection.
var ErrClosed = errors.New("batchd client: connection closed")

// SocketPath returns path, or BATCHD_SOCKET, or DefaultSocket.
func SocketPath(path string) string {
	if path != "" {
		return path
	}
	if p := os.Getenv("BATCHD_SOCKET"); p != "" {
		return p
	}
	return DefaultSocket
}

// Client is a connection to the daemon; safe for concurrent use.
type Client struct {
	c     net.Conn
	wmu   sync.Mutex
	w     *bufio.Writer
	mu    sync.Mutex
	next  uint64
	calls map[uint64]*mailbox
	err   error // why the connection ended
	done  chan struct{}
	// Server is the daemon's hello reply.
	Server wire.Hello
}

// mailbox buffers the frames of one call so that the reader never waits.
type mailbox struct {
	mu     sync.Mutex
	frames [][]byte
	notify chan struct{}
}

func (m *mailbox) put(b []byte) {
	m.mu.Lock()
	m.frames = append(m.frames, b)
	m.mu.Unlock()
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

// Dial connects to the daemon's socket (see SocketPath) and says hello.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", SocketPath(path))
	if err != nil {
		return nil, err
	}
	c := &Client{c: nc, w: bufio.NewWriter(nc), calls: map[uint64]*mailbox{}, done: make(chan struct{})}
	go c.read()
	id, mb := c.open()
	defer c.closeCall(id)
	werr := c.write(&wire.Hello{Type: wire.TypeHello, ID: id, Version: wire.ProtocolVersion, Client: "batchd-go"})
	if werr != nil {
		// A refused peer is told why before the hang-up: read that if it came.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
	}
	body, err := c.recv(ctx, mb)
	if err != nil {
		nc.Close()
		var ie *wire.Error
		if werr != nil && !errors.As(err, &ie) {
			err = werr
		}
		return nil, err
	}
	if err := wire.Decode(body, &c.Server); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connection; the daemon cancels requests still running.
func (c *Client) Close() error {
	err := c.c.Close()
	<-c.done
	return err
}

func (c *Client) read() {
	defer close(c.done)
	br := bufio.NewReader(c.c)
	for {
		body, err := wire.ReadFrame(br, 64<<20)
		if err != nil {
			c.fail(err)
			return
		}
		h, err := wire.DecodeHeader(body)
		if err != nil {
			continue
		}
		c.mu.Lock()
		mb := c.calls[h.ID]
		if mb == nil && h.ID == 0 && h.Type == wire.TypeError {
			// A connection-level error (refused peer, bad frame): every call sees it.
			for _, m := range c.calls {
				m.put(body)
			}
		}
		c.mu.Unlock()
		if mb != nil {
			mb.put(body)
		}
	}
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	for _, m := range c.calls {
		select {
		case m.notify <- struct{}{}:
		default:
		}
	}
}

func (c *Client) open() (uint64, *mailbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	mb := &mailbox{notify: make(chan struct{}, 1)}
	c.calls[c.next] = mb
	return c.next, mb
}

func (c *Client) closeCall(id uint64) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

func (c *Client) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := wire.WriteFrame(c.w, v); err != nil {
		return err
	}
	return c.w.Flush()
}

// recv returns the next frame of a call; error frames become *wire.Error.
func (c *Client) recv(ctx context.Context, mb *mailbox) ([]byte, error) {
	for {
		mb.mu.Lock()
		if len(mb.frames) > 0 {
			b := mb.frames[0]
			mb.frames = mb.frames[1:]
			mb.mu.Unlock()
			if h, _ := wire.DecodeHeader(b); h.Type == wire.TypeError {
				var e wire.ErrorFrame
				_ = wire.Decode(b, &e)
				return nil, &wire.Error{Code: e.Code, Message: e.Message}
			}
			return b, nil
		}
		mb.mu.Unlock()
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-mb.notify:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// call sends a one-reply message and decodes the reply into out.
func (c *Client) call(ctx context.Context, msg func(id uint64) any, out any) error {
	id, mb := c.open()
	defer c.closeCall(id)
	if err := c.write(msg(id)); err != nil {
		return err
	}
	body, err := c.recv(ctx, mb)
	if err != nil {
		return err
	}
	return wire.Decode(body, out)
}

// Stats returns the daemon's figures.
func (c *Client) Stats(ctx context.Context) (*wire.StatsReport, error) {
	var s wire.Stats
	err := c.call(ctx, func(id uint64) any { return &wire.Stats{Type: wire.TypeStats, ID: id} }, &s)
	return s.Stats, err
}

// Reload asks the daemon to re-read its config file, as SIGHUP does (an
// admin's explicit reload, which may widen access). A file that does not
// validate is an error with the daemon's reasons.
func (c *Client) Reload(ctx context.Context) (*wire.Reload, error) {
	var r wire.Reload
	err := c.call(ctx, func(id uint64) any { return &wire.Reload{Type: wire.TypeReload, ID: id} }, &r)
	return &r, err
}

// Models lists every model the daemon knows, loaded or not.
func (c *Client) Models(ctx context.Context) ([]wire.ModelEntry, error) {
	var m wire.Models
	err := c.call(ctx, func(id uint64) any { return &wire.Models{Type: wire.TypeModels, ID: id} }, &m)
	return m.Models, err
}

// Running lists the models loaded now.
func (c *Client) Running(ctx context.Context) ([]wire.ModelEntry, error) {
	var m wire.Models
	err := c.call(ctx, func(id uint64) any { return &wire.Models{Type: wire.TypePS, ID: id} }, &m)
	return m.Models, err
}

// Load loads model (waiting until it is) and keeps it keepAlive once idle
// ("" its default, "-1" forever); Unload unloads it once idle.
func (c *Client) Load(ctx context.Context, model, keepAlive string) error {
	var r wire.Load
	return c.call(ctx, func(id uint64) any {
		return &wire.Load{Type: wire.TypeLoad, ID: id, Model: model, KeepAlive: keepAlive}
	}, &r)
}

// Unload unloads model once no request runs on it.
func (c *Client) Unload(ctx context.Context, model string) error {
	var r wire.Load
	return c.call(ctx, func(id uint64) any { return &wire.Load{Type: wire.TypeUnload, ID: id, Model: model} }, &r)
}

// EmbedRequest asks for one vector per input.
type EmbedRequest struct {
	Model  string
	Input  []string // texts; or Tokens, token ids per input
	Tokens [][]int
	// NoTruncate refuses an input longer than the context instead of
	// cutting it; Raw returns the pooled state un-normalised; Dimensions
	// keeps the first this many values (normalised again).
	NoTruncate, Raw bool
	Dimensions      int
	KeepAlive       string
}

// Embed returns the inputs' embeddings, in order, and the prompt tokens
// they took.
func (c *Client) Embed(ctx context.Context, r EmbedRequest) ([][]float32, int, error) {
	var res wire.Embed
	err := c.call(ctx, func(id uint64) any {
		e := &wire.Embed{Type: wire.TypeEmbed, ID: id, Model: r.Model, Input: r.Input, Tokens: r.Tokens,
			Dimensions: r.Dimensions, KeepAlive: r.KeepAlive}
		if r.NoTruncate {
			f := false
			e.Truncate = &f
		}
		if r.Raw {
			f := false
			e.Normalize = &f
		}
		return e
	}, &res)
	return res.Embeddings, res.PromptTokens, err
}

// RerankRequest asks a reranker to score documents against a query.
type RerankRequest struct {
	Model     string
	Query     string
	Documents []string
	TopN      int // the best this many (0: all)
	KeepAlive string
}

// Rerank returns the documents' scores, best first (each with its index
// in Documents), and the prompt tokens they took.
func (c *Client) Rerank(ctx context.Context, r RerankRequest) ([]wire.RerankResult, int, error) {
	var res wire.Rerank
	err := c.call(ctx, func(id uint64) any {
		return &wire.Rerank{Type: wire.TypeRerank, ID: id, Model: r.Model, Query: r.Query, Documents: r.Documents,
			TopN: r.TopN, KeepAlive: r.KeepAlive}
	}, &res)
	return res.Results, res.PromptTokens, err
}

// Warm prefills prompts and chat prefixes (each an OpenAI-style messages
// array) into model's prefix cache; it returns the prompt tokens computed
// and, of those, how many were cached already.
func (c *Client) Warm(ctx context.Context, model string, prompts []string, chats []json.RawMessage) (tokens, cached int, err error) {
	var res wire.Warm
	err = c.call(ctx, func(id uint64) any {
		w := &wire.Warm{Type: wire.TypeWarm, ID: id, Model: model, Prompts: prompts}
		for _, m := range chats {
			w.Messages = append(w.Messages, wire.JSON(m))
		}
		return w
	}, &res)
	return res.Tokens, res.Cached, err
}

// Health returns the daemon's state and model.
func (c *Client) Health(ctx context.Context) (*wire.Health, error) {
	var h wire.Health
	err := c.call(ctx, func(id uint64) any { return &wire.Health{Type: wire.TypeHealth, ID: id} }, &h)
	return &h, err
}

// Cancel cancels a request by its server-wide id (Result.RequestID or
// Delta.RequestID): one's own, or anyone's for an admin.
func (c *Client) Cancel(ctx context.Context, requestID uint64) error {
	var r wire.Cancelled
	return c.call(ctx, func(id uint64) any {
		return &wire.Cancel{Type: wire.TypeCancel, ID: id, RequestID: requestID}
	}, &r)
}
