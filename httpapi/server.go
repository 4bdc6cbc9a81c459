package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// Users is the per-user accounting and access policy the msgpack server
// keeps (*ipc.Server): the HTTP API shares them.
type Users interface {
	AcquireUser(p ipc.Peer) error
	ReleaseUser(p ipc.Peer)
	Policy() *ipc.Policy
}

// Options configure a Server.
type Options struct {
	Backend ipc.Backend
	Users   Users
	// Anonymous is who a TCP request without a key runs as (under the
	// same policy); nil answers it 401.
	Anonymous *ipc.Peer
	Logger    *slog.Logger
	// Model is the id /v1/models lists; requests may name it, or give any
	// model when AnyModel is set.
	Model string
	// MaxBodyBytes bounds a request body; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Budget is the connection budget shared with the daemon's other
	// listeners; nil makes one of MaxConnections (default 1024) for this
	// server's listeners together.
	Budget         *ipc.Budget
	MaxConnections int
	// PreAuthTimeout closes a connection that has made no authenticated
	// request in this long (a TCP client without a valid key, most of
	// all); default 10s, as the msgpack socket's hello_timeout.
	PreAuthTimeout time.Duration
	// WriteTimeout drops a client that takes longer to take one event or
	// response; default 30s.
	WriteTimeout time.Duration
	// Responses keeps the responses /v1/responses stores for
	// previous_response_id and GET (store: true), shared with the msgpack
	// socket's submits; nil makes one of ResponsesStoreBytes (0: 256 MiB,
	// negative: none are kept) for this server alone.
	Responses           *ipc.ResponseStore
	ResponsesStoreBytes int64
}

// Defaults of Options.
const (
	DefaultMaxBodyBytes   = 8 << 20
	DefaultMaxConnections = 1024
	defaultWriteTimeout   = 30 * time.Second
)

// Server serves the API on any number of listeners.
type Server struct {
	o       Options
	log     *slog.Logger
	http    *http.Server
	keys    atomic.Pointer[[]apiKey]
	mux     *http.ServeMux
	created int64
	wg      sync.WaitGroup     // handlers reading streams to their end
	renders atomic.Uint64      // render answers' ids
	stored  *ipc.ResponseStore // /v1/responses' kept responses
}

// apiKey maps a bearer token to the user it stands for.
type apiKey struct {
	key  []byte
	peer ipc.Peer
}

// New returns a server; Serve starts it on a listener.
func New(o Options) *Server {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Budget == nil {
		o.Budget = ipc.NewBudget(ipc.BudgetOptions{Max: o.MaxConnections})
	}
	if o.PreAuthTimeout <= 0 {
		o.PreAuthTimeout = 10 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = defaultWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, log: o.Logger.With("component", "http"), created: time.Now().Unix(), stored: o.Responses}
	if s.stored == nil {
		s.stored = ipc.NewResponseStore(o.ResponsesStoreBytes)
	}
	s.keys.Store(&[]apiKey{})
	mux := http.NewServeMux()
	s.mux = mux
	mux.HandleFunc("GET /health", s.health)
	mux.Handle("GET /v1/models", s.auth(s.models))
	mux.Handle("GET /v1/models/{id...}", s.auth(s.model))
	mux.Handle("POST /v1/chat/completions", s.auth(s.chat))
	mux.Handle("POST /v1/completions", s.auth(s.completions))
	mux.Handle("POST /v1/embeddings", s.auth(s.embeddings))
	for _, route := range []string{"/v1/rerank", "/v2/rerank", "/rerank", "/v1/reranking", "/reranking"} {
		mux.Handle("POST "+route, s.auth(s.rerank))
	}
	mux.Handle("POST /v1/chat/completions/render", s.auth(s.renderChat))
	mux.Handle("POST /v1/responses", s.auth(s.responses))
	mux.Handle("GET /v1/responses/{id}", s.auth(s.getResponse))
	mux.Handle("DELETE /v1/responses/{id}", s.auth(s.deleteResponse))
	mux.Handle("POST /v1/completions/render", s.auth(s.renderCompletion))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &httpError{status: http.StatusNotFound, typ: "invalid_request_error",
			msg: "no route " + r.Method + " " + r.URL.Path})
	})
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ConnContext: connContext,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	return s
}

// SetAPIKeys replaces the bearer keys that admit TCP clients: key -> the
// user it stands for (uid, primary gid and groups from the user database,
// so that allowed_users and allowed_groups judge it as they judge a peer).
func (s *Server) SetAPIKeys(keys map[string]ipc.Peer) {
	ks := make([]apiKey, 0, len(keys))
	for k, p := range keys {
		p.PID = -1
		ks = append(ks, apiKey{key: []byte(k), peer: p})
	}
	s.keys.Store(&ks)
}

// Serve accepts connections on ln until Shutdown or Close. On a Unix
// listener the peer's credentials decide access; on any other a bearer
// API key must.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(s.o.Budget.Listener(ln, ipc.ListenerOptions{PreAuth: s.o.PreAuthTimeout, Refuse: refuse503}))
	if errors.Is(err, http.ErrServerClosed) {
		return ipc.ErrServerClosed
	}
	return err
}

// Shutdown stops accepting and waits for requests in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Close closes every listener and connection now.
func (s *Server) Close() error { return s.http.Close() }

type peerKey struct{}

// connInfo is what a connection's context carries: the Unix peer, or
// that it came over TCP, and its slot in the connection budget.
type connInfo struct {
	unix bool
	peer ipc.Peer
	err  error
	slot *ipc.Slot
}

func connContext(ctx context.Context, c net.Conn) context.Context {
	ci := &connInfo{}
	if bc, ok := c.(*ipc.BudgetConn); ok {
		c, ci.slot = bc.Conn, bc.Slot()
	}
	if _, ok := c.(*net.UnixConn); ok {
		ci.unix = true
		ci.peer, ci.err = ipc.PeerCred(c)
	}
	return context.WithValue(ctx, peerKey{}, ci)
}

// auth admits a request as a peer: by its Unix credentials under the
// policy, or by its bearer key.
func (s *Server) auth(h func(http.ResponseWriter, *http.Request, ipc.Peer)) http.Handler {
	return s.authWith(h, writeError)
}

// PeerHandler serves a request of an authenticated peer.
type PeerHandler func(http.ResponseWriter, *http.Request, ipc.Peer)

// Route serves another API on the same listeners, under the same access
// rules and connection budget (Ollama's, from httpapi/ollama): pattern as
// http.ServeMux takes it; fail writes a refusal in that API's shape.
// A nil fail serves pattern without authentication (a liveness probe).
func (s *Server) Route(pattern string, h PeerHandler, fail func(w http.ResponseWriter, status int, msg string)) {
	if fail == nil {
		s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { h(w, r, ipc.Peer{}) })
		return
	}
	s.mux.Handle(pattern, s.authWith(h, func(w http.ResponseWriter, herr *httpError) {
		if herr.authHeader {
			w.Header().Set("WWW-Authenticate", "Bearer")
		}
		fail(w, herr.status, herr.msg)
	}))
}

// Users is who counts and admits requests: the ipc server's.
func (s *Server) Users() Users { return s.o.Users }

// authWith checks the peer, writing a refusal with writeErr.
func (s *Server) authWith(h func(http.ResponseWriter, *http.Request, ipc.Peer), writeErr func(http.ResponseWriter, *httpError)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ci, _ := r.Context().Value(peerKey{}).(*connInfo)
		if ci == nil {
			ci = &connInfo{}
		}
		p, herr := s.authenticate(r, ci)
		if herr == nil && ci.slot != nil {
			if err := ci.slot.Authenticate(p.UID); err != nil {
				herr = fromWire(err)
			}
		}
		if herr != nil {
			// A request that fails authentication ends its connection: a
			// client without a key must not hold a slot with keep-alive.
			w.Header().Set("Connection", "close")
			writeErr(w, herr)
			return
		}
		defer s.recovered(w, r, writeErr)
		h(w, r, p)
	})
}

// recovered turns a handler's panic into a 500 for that request, logged
// with its stack, instead of net/http's bare hang-up: no request's
// content, however it trips a bug, should end more than itself.
func (s *Server) recovered(w http.ResponseWriter, r *http.Request, writeErr func(http.ResponseWriter, *httpError)) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler { //nolint:errorlint // net/http's own sentinel, compared as it does
		panic(v)
	}
	s.log.Error("panic serving a request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
	w.Header().Set("Connection", "close")
	writeErr(w, &httpError{status: http.StatusInternalServerError, typ: "server_error", msg: "internal error (logged by the daemon)"})
}

// authenticate decides who a request is: its Unix peer under the policy,
// or the user of its bearer key, who passes the same policy.
func (s *Server) authenticate(r *http.Request, ci *connInfo) (ipc.Peer, *httpError) {
	if ci.unix {
		if ci.err != nil {
			return ipc.Peer{}, &httpError{status: http.StatusForbidden, typ: "permission_error", msg: "peer credentials: " + ci.err.Error()}
		}
		if !s.o.Users.Policy().Allowed(ci.peer) {
			return ipc.Peer{}, &httpError{status: http.StatusForbidden, typ: "permission_error",
				msg: "uid " + itoa(ci.peer.UID) + " may not use batchd (server.allowed_users, server.allowed_groups)"}
		}
		return ci.peer, nil
	}
	p, ok := s.bearer(r)
	if !ok && s.o.Anonymous != nil && r.Header.Get("Authorization") == "" && r.Header.Get("X-Api-Key") == "" {
		p, ok = *s.o.Anonymous, true // a wrong key stays a 401
	}
	if !ok {
		return ipc.Peer{}, &httpError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key",
			msg: "missing or unknown API key: send Authorization: Bearer KEY (or x-api-key: KEY) with a key from server.api_keys", authHeader: true}
	}
	if !s.o.Users.Policy().Allowed(p) {
		return ipc.Peer{}, &httpError{status: http.StatusForbidden, typ: "permission_error",
			msg: "the API key's user (uid " + itoa(p.UID) + ") may not use batchd (server.allowed_users, server.allowed_groups)"}
	}
	return p, nil
}

// refuse503 tells a connection the budget has no room for why, in HTTP.
func refuse503(c net.Conn, err error) {
	b, _ := json.Marshal((&httpError{typ: "rate_limit_error", msg: err.Error()}).body())
	body := string(b)
	_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body))
}

// bearer finds the key of an Authorization header, comparing in constant time.
func (s *Server) bearer(r *http.Request) (ipc.Peer, bool) {
	// The scheme is case-insensitive (RFC 9110 11.1): bearer and BEARER too.
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimLeft(tok, " ")
	if r.Header.Get("Authorization") == "" { // Anthropic's clients send x-api-key
		scheme, tok = "Bearer", r.Header.Get("X-Api-Key")
	}
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return ipc.Peer{}, false
	}
	found, p := 0, ipc.Peer{}
	for _, k := range *s.keys.Load() {
		if subtle.ConstantTimeCompare(k.key, []byte(tok)) == 1 {
			found, p = 1, k.peer
		}
	}
	return p, found == 1
}

// httpError is an error in OpenAI's shape with its status code.
type httpError struct {
	status          int
	typ, msg, param string
	code            string
	authHeader      bool // a 401: say which scheme (WWW-Authenticate)
}

// fromWire maps a wire error to its HTTP status and OpenAI type.
// WireStatus is the HTTP status and message of a backend's error, for
// the other APIs on these listeners (Ollama's, Anthropic's), which write
// them in their own shapes.
func WireStatus(err error) (int, string) {
	h := fromWire(err)
	return h.status, h.msg
}

func fromWire(err error) *httpError {
	e := wire.AsError(err)
	h := &httpError{msg: e.Message, code: e.Code}
	switch e.Code {
	case wire.CodeInvalidArgument:
		h.status, h.typ = http.StatusBadRequest, "invalid_request_error"
	case wire.CodePermissionDenied:
		h.status, h.typ = http.StatusForbidden, "permission_error"
	case wire.CodeNotFound:
		h.status, h.typ = http.StatusNotFound, "not_found_error"
	case wire.CodeQueueFull, wire.CodeResourceExhausted:
		h.status, h.typ = http.StatusTooManyRequests, "rate_limit_error"
	case wire.CodeUnavailable:
		h.status, h.typ = http.StatusServiceUnavailable, "unavailable_error"
	default:
		h.status, h.typ = http.StatusInternalServerError, "server_error"
	}
	return h
}

func (h *httpError) body() map[string]apiError {
	e := apiError{Message: h.msg, Type: h.typ}
	if h.param != "" {
		e.Param = &h.param
	}
	if h.code != "" {
		e.Code = &h.code
	}
	return map[string]apiError{"error": e}
}

func writeError(w http.ResponseWriter, h *httpError) {
	if h.authHeader {
		w.Header().Set("WWW-Authenticate", `Bearer realm="batchd"`)
	}
	writeJSON(w, h.status, h.body())
}

func itoa(u uint32) string { return strconv.FormatUint(uint64(u), 10) }
