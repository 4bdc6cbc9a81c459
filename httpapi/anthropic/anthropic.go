// Package anthropic serves Anthropic's Messages API (/v1/messages and
// /v1/messages/count_tokens) on batchd's HTTP listeners, for Claude Code
// and the Anthropic SDKs. Requests map to wire.Submit as the OpenAI API's
// do (content blocks to messages, tool_use and tool_result to calls and
// results, thinking to reasoning); what batchd cannot honour is a 400
// naming it, in Anthropic's error shape.
package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/batchd/batchd/httpapi"
	"github.com/batchd/batchd/ipc"
)

// maxBody bounds a request body, as the OpenAI API's.
const maxBody = 8 << 20

// Backend is what the API needs of the daemon: requests, and rendering a
// conversation to count its tokens.
type Backend interface {
	ipc.Backend
	ipc.Renderer
}

// API is the Messages API over a backend.
type API struct {
	b     Backend
	users httpapi.Users
}

// Register adds the routes to srv.
func Register(srv *httpapi.Server, b Backend) {
	a := &API{b: b, users: srv.Users()}
	srv.Route("POST /v1/messages", a.messages, writeError)
	srv.Route("POST /v1/messages/count_tokens", a.countTokens, writeError)
}

// errorTypes are Anthropic's error types by HTTP status.
var errorTypes = map[int]string{
	http.StatusBadRequest: "invalid_request_error", http.StatusUnauthorized: "authentication_error",
	http.StatusForbidden: "permission_error", http.StatusNotFound: "not_found_error",
	http.StatusRequestEntityTooLarge: "request_too_large", http.StatusTooManyRequests: "rate_limit_error",
	http.StatusServiceUnavailable: "overloaded_error",
}

// errorBody is Anthropic's error shape.
func errorBody(status int, msg string) map[string]any {
	typ := errorTypes[status]
	if typ == "" {
		typ = "api_error"
	}
	return map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
}

// writeError writes an error in Anthropic's shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody(status, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeWireError(w http.ResponseWriter, err error) {
	status, msg := httpapi.WireStatus(err)
	writeError(w, status, msg)
}

// decode reads the body; a body over maxBody is a 413.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", maxBody))
			return false
		}
		writeError(w, http.StatusBadRequest, "invalid request body: "+err.Error())
		return false
	}
	return true
}

// messages serves POST /v1/messages.
func (a *API) messages(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req request
	if !decode(w, r, &req) {
		return
	}
	sub, msg := req.submit(false)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	if err := a.users.AcquireUser(p); err != nil {
		writeWireError(w, err)
		return
	}
	defer a.users.ReleaseUser(p)
	st, err := a.b.Submit(r.Context(), p, sub)
	if err != nil {
		writeWireError(w, err)
		return
	}
	o := &out{w: w, model: req.Model, id: "msg_" + randomID(24), prompt: len(st.PromptTokens()), thinking: req.thinkingOn(),
		omit: req.Thinking != nil && req.Thinking.Display == "omitted"}
	o.run(r.Context(), st, req.Stream, func() { _ = a.b.Cancel(p, st.RequestID(), true) })
}

// countTokens serves POST /v1/messages/count_tokens: the prompt the
// request would run, rendered and tokenized, counted.
func (a *API) countTokens(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req request
	if !decode(w, r, &req) {
		return
	}
	sub, msg := req.submit(true)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	toks, err := a.b.Render(r.Context(), p, sub)
	if err != nil {
		writeWireError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": len(toks)})
}
