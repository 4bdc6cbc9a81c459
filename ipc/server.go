package ipc

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batchd/batchd/ipc/wire"
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("ipc: server closed")

// Backend is what the server serves; the daemon adapts the engine to it.
// Errors should be *wire.Error (or wrap one) so that they reach clients with their code.
type Backend interface {
	// wire.Submit starts a request; ctx ends with the connection.
	Submit(ctx context.Context, p Peer, s *wire.Submit) (RequestStream, error)
	// wire.Cancel cancels requestID for p; admin may cancel anyone's.
	Cancel(p Peer, requestID uint64, admin bool) error
	Stats() *wire.StatsReport
	Health() wire.Health
}

// ModelLister is a Backend that serves several models (wire.Models).
type ModelLister interface {
	Models() []wire.ModelEntry
}

// ModelLoader is a Backend that loads and unloads models on request
// (wire.Load; unload: wire.TypeUnload).
type ModelLoader interface {
	// LoadModel loads (or unloads) a model for p; it stops when ctx ends.
	LoadModel(ctx context.Context, p Peer, name, keepAlive string, unload bool) error
}

// ModelAdmin is a Backend whose admins may delete a model's file and give
// a model another name (Ollama's /api/delete and /api/copy).
type ModelAdmin interface {
	DeleteModel(p Peer, name string) error
	CopyModel(p Peer, src, dst string) error
}

// Embedder is a Backend that computes embeddings (wire.Embed).
type Embedder interface {
	Embed(ctx context.Context, p Peer, e *wire.Embed) (*wire.Embed, error)
}

// Responses is the store of responses (Options.Responses), or nil.
func (s *Server) Responses() *ResponseStore { return s.stored }

// Reranker is a Backend that scores documents against a query
// (wire.Rerank).
type Reranker interface {
	Rerank(ctx context.Context, p Peer, r *wire.Rerank) (*wire.Rerank, error)
}

// Renderer is a Backend that tells the token ids a submit would run
// without running it (the endpoint picker's tokenizer: vLLM's render
// endpoints).
type Renderer interface {
	Render(ctx context.Context, p Peer, s *wire.Submit) ([]int, error)
}

// Warmer is a Backend that prefills prompts into its prefix cache (wire.Warm).
type Warmer interface {
	Warm(ctx context.Context, p Peer, w *wire.Warm) (*wire.Warm, error)
}

// Reloader is a Backend that can reload its configuration on an admin's
// request (wire.Reload); a Backend without it answers that it cannot.
type Reloader interface {
	Reload(p Peer) (*wire.Reload, error)
}

// RequestStream yields a request's events; it always ends with a wire.Done.
type RequestStream interface {
	RequestID() uint64
	PromptTokens() []int
	// Next blocks for the next event. Deltas that piled up are merged.
	Next(ctx context.Context) (Event, error)
}

// Event is a text delta, or the terminal wire.Done.
type Event struct {
	Text      string // content
	Tokens    []int
	Logprobs  []wire.Logprob
	Reasoning string
	ToolCalls []wire.ToolCallDelta
	Done      *wire.Done
}

// Options configure a Server.
type Options struct {
	Backend      Backend
	Logger       *slog.Logger
	MaxFrame     int           // default wire.DefaultMaxFrame
	WriteTimeout time.Duration // a client that takes longer to read a frame is dropped; default 30s
	// Budget is the connection budget shared with the daemon's other
	// listeners; nil makes one of MaxConnections (default
	// DefaultMaxConnections) for this server alone. A connection is pending
	// until its hello; the excess is refused with a resource_exhausted frame.
	Budget         *Budget
	MaxConnections int
	// HelloTimeout closes a connection that has not completed hello in
	// this long (PostgreSQL's authentication_timeout). Default DefaultHelloTimeout.
	HelloTimeout time.Duration
	Version      string // server version for hello
	Model        string // model name for hello
	Policy       Policy
	// Responses keeps the responses a submit stores (Submit.Store) for a
	// later one's previous_response_id; nil keeps none (such a submit is
	// refused). The HTTP API's /v1/responses shares it.
	Responses *ResponseStore
}

// Defaults of Options.
const (
	DefaultMaxConnections = 1024
	DefaultHelloTimeout   = 10 * time.Second
)

// Server serves the protocol on Unix sockets, like net/http.Server: Serve,
// Shutdown (stop accepting, drain, close) and Close.
type Server struct {
	backend  Backend
	log      *slog.Logger
	maxFrame int
	wtimeout time.Duration
	budget   *Budget
	helloTO  time.Duration
	version  string
	model    string
	policy   atomic.Pointer[Policy]
	stored   *ResponseStore
	peerCred func(net.Conn) (Peer, error) // tests swap in fake peers
	// base is every connection's parent context; Close cancels it, which
	// also stops work a connection started (a long tokenization).
	base       context.Context
	cancelBase context.CancelFunc
	warn       rateLimiter // for warnings a hostile peer could repeat at will

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	writing   int            // done frames being written after their slot was freed (Shutdown waits for them)
	inflight  map[uint32]int // per uid
	closed    bool
	done      chan struct{} // closed with closed
	lastBusy  time.Time     // when the last connection or request ended
	wg        sync.WaitGroup
}

// NewServer returns a server; call Serve.
func NewServer(o Options) *Server {
	if o.MaxFrame <= 0 {
		o.MaxFrame = wire.DefaultMaxFrame
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.Budget == nil {
		o.Budget = NewBudget(BudgetOptions{Max: o.MaxConnections, Self: o.Policy.Self})
	}
	if o.HelloTimeout <= 0 {
		o.HelloTimeout = DefaultHelloTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{backend: o.Backend, log: o.Logger.With("component", "ipc"), maxFrame: o.MaxFrame, stored: o.Responses,
		wtimeout: o.WriteTimeout, budget: o.Budget, helloTO: o.HelloTimeout,
		version: o.Version, model: o.Model, peerCred: peerCred,
		listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{}, inflight: map[uint32]int{},
		done: make(chan struct{}), lastBusy: time.Now(), warn: rateLimiter{every: 10 * time.Second}}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	pol := o.Policy
	s.policy.Store(&pol)
	return s
}

// SetPolicy replaces the access policy; it applies to new connections and
// to every request from then on.
func (s *Server) SetPolicy(p Policy) { s.policy.Store(&p) }

// Serve accepts connections on ln until Shutdown or Close. Like net/http,
// it backs off and retries when accept fails for a reason that passes (out
// of file descriptors, above all): a client that opens many connections
// must not stop the daemon. Any other accept error closes ln (removing its
// socket file) and is returned.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			if closed || !retryAccept(err) {
				delete(s.listeners, ln)
			}
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			if !retryAccept(err) {
				ln.Close()
				return err
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			if n, ok := s.warn.allow("accept"); ok {
				s.log.Warn("accept failed; retrying", "err", err, "retry_in", delay, "repeats", n)
			}
			select {
			case <-time.After(delay):
			case <-s.done:
			}
			continue
		}
		delay = 0
		s.serveConn(c)
	}
}

// retryAccept reports whether an accept error passes with time: descriptors
// or memory run out, or a connection was reset before it was accepted.
func retryAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		busy := s.writing // done frames being written: their slots are already free
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

// Close closes listeners and connections at once; their requests are
// cancelled. It returns the listeners' close errors.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	var errs []error
	for ln := range s.listeners {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
		delete(s.listeners, ln)
	}
	for c := range s.conns {
		c.c.Close()
	}
	s.mu.Unlock()
	s.cancelBase()
	s.wg.Wait()
	return errors.Join(errs...)
}

// Refused returns how many connections the budget refused for room.
func (s *Server) Refused() uint64 { return s.budget.Stats().Refused }

func (s *Server) serveConn(nc net.Conn) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		nc.Close()
		return
	}
	ctx, cancel := context.WithCancel(s.base)
	c := &conn{s: s, c: nc, ctx: ctx, cancel: cancel, w: bufio.NewWriter(nc), reqs: map[uint64]uint64{}}
	slot, err := s.budget.Admit(c.evicted)
	if err != nil {
		cancel()
		if k, ok := s.warn.allow("max_connections"); ok {
			s.log.Warn("connection refused: the connection budget is full", "budget", s.budget.Stats().Max, "repeats", k)
		}
		// Say why without waiting on the client: a fresh socket's buffer
		// takes one small frame, and the deadline bounds the rest.
		_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		e := wire.AsError(err)
		_ = wire.WriteFrame(nc, &wire.ErrorFrame{Type: wire.TypeError, Code: e.Code, Message: e.Message})
		nc.Close()
		return
	}
	c.slot = slot
	peer, err := s.peerCred(nc)
	if err != nil {
		if n, ok := s.warn.allow("peercred"); ok {
			s.log.Warn("peer credentials unavailable", "err", err, "repeats", n)
		}
		slot.Release()
		cancel()
		nc.Close()
		return
	}
	c.peer = peer
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		slot.Release()
		nc.Close()
		cancel()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go c.serve()
}
