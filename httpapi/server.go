package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
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
	Logger  *slog.Logger
	// Model is the id /v1/models lists; requests may name it, or give any
	// model when AnyModel is set.
	Model string
	// MaxBodyBytes bounds a request body; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxConnections caps open connections per listener; default 1024.
	MaxConnections int
	// WriteTimeout drops a client that takes longer to take one event or
	// response; default 30s.
	WriteTimeout time.Duration
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
	created int64
	wg      sync.WaitGroup // handlers reading streams to their end
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
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = defaultWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, log: o.Logger.With("component", "http"), created: time.Now().Unix()}
	s.keys.Store(&[]apiKey{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.Handle("GET /v1/models", s.auth(s.models))
	mux.Handle("GET /v1/models/{id...}", s.auth(s.model))
	mux.Handle("POST /v1/chat/completions", s.auth(s.chat))
	mux.Handle("POST /v1/completions", s.auth(s.completions))
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
	err := s.http.Serve(limitListener(ln, s.o.MaxConnections))
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
// that it came over TCP.
type connInfo struct {
	unix bool
	peer ipc.Peer
	err  error
}

func connContext(ctx context.Context, c net.Conn) context.Context {
	ci := &connInfo{}
	if lc, ok := c.(*limitedConn); ok {
		c = lc.Conn
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ci, _ := r.Context().Value(peerKey{}).(*connInfo)
		if ci == nil {
			ci = &connInfo{}
		}
		if ci.unix {
			if ci.err != nil {
				writeError(w, &httpError{status: http.StatusForbidden, typ: "permission_error", msg: "peer credentials: " + ci.err.Error()})
				return
			}
			if !s.o.Users.Policy().Allowed(ci.peer) {
				writeError(w, &httpError{status: http.StatusForbidden, typ: "permission_error",
					msg: "uid " + itoa(ci.peer.UID) + " may not use batchd (server.allowed_users, server.allowed_groups)"})
				return
			}
			h(w, r, ci.peer)
			return
		}
		p, ok := s.bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="batchd"`)
			writeError(w, &httpError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key",
				msg: "missing or unknown API key: send Authorization: Bearer KEY with a key from server.api_keys"})
			return
		}
		// A key stands for its user, who passes the same policy as a peer.
		if !s.o.Users.Policy().Allowed(p) {
			writeError(w, &httpError{status: http.StatusForbidden, typ: "permission_error",
				msg: "the API key's user (uid " + itoa(p.UID) + ") may not use batchd (server.allowed_users, server.allowed_groups)"})
			return
		}
		h(w, r, p)
	})
}

// bearer finds the key of an Authorization header, comparing in constant time.
func (s *Server) bearer(r *http.Request) (ipc.Peer, bool) {
	// The scheme is case-insensitive (RFC 9110 11.1): bearer and BEARER too.
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimLeft(tok, " ")
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
}

// fromWire maps a wire error to its HTTP status and OpenAI type.
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
	writeJSON(w, h.status, h.body())
}

func itoa(u uint32) string { return strconv.FormatUint(uint64(u), 10) }
