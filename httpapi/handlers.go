package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// health answers like llama.cpp's server: 200 {"status":"ok"} when it can
// serve (a sleeping daemon wakes on the next request), else 503.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	h := s.o.Backend.Health()
	switch h.State {
	case "ready", "sleeping":
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "state": h.State})
	default:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": h.State,
			"error": apiError{Message: "batchd is " + h.State, Type: "unavailable_error"}})
	}
}

func (s *Server) modelObject(id string) modelObject {
	return modelObject{ID: id, Object: "model", Created: s.created, OwnedBy: "batchd"}
}

// modelList is every model the backend serves, by name.
func (s *Server) modelList() []modelObject {
	ml, ok := s.o.Backend.(ipc.ModelLister)
	if !ok {
		return []modelObject{s.modelObject(s.o.Model)}
	}
	var out []modelObject
	for _, m := range ml.Models() {
		out = append(out, s.modelObject(m.Name))
	}
	return out
}

func (s *Server) models(w http.ResponseWriter, r *http.Request, _ ipc.Peer) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": s.modelList()})
}

func (s *Server) model(w http.ResponseWriter, r *http.Request, _ ipc.Peer) {
	id := r.PathValue("id")
	if ml, ok := s.o.Backend.(ipc.ModelLister); ok {
		for _, m := range ml.Models() {
			if m.Name == id || slices.Contains(m.Aliases, id) {
				writeJSON(w, http.StatusOK, s.modelObject(m.Name))
				return
			}
		}
		writeError(w, &httpError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found",
			msg: fmt.Sprintf("the model %q does not exist (GET /v1/models)", id)})
		return
	}
	if herr := s.checkModel(id); herr != nil {
		writeError(w, herr)
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject(s.o.Model))
}

// checkModel accepts the served model's id, or no model named.
func (s *Server) checkModel(name string) *httpError {
	if _, many := s.o.Backend.(ipc.ModelLister); many || name == "" || name == s.o.Model { // many: the backend resolves it
		return nil
	}
	return &httpError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model", code: "model_not_found",
		msg: fmt.Sprintf("the model %q does not exist; this server serves %q (GET /v1/models)", name, s.o.Model)}
}

// decode reads a bounded JSON body into v.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *httpError {
	// Any Content-Type is read as JSON, as llama.cpp's server does: curl -d
	// sends application/x-www-form-urlencoded unless told otherwise.
	body := http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &httpError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error",
				msg: fmt.Sprintf("request body over %d bytes", mbe.Limit)}
		}
		return errInvalid("", "request body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errInvalid("", "request body: text after the JSON object")
	}
	return nil
}

// read decodes a body into req and checks the model it names (model
// reads it from req), answering an error itself; false: it did.
func (s *Server) read(w http.ResponseWriter, r *http.Request, req any, model func() string) bool {
	herr := s.decode(w, r, req)
	if herr == nil {
		herr = s.checkModel(model())
	}
	if herr != nil {
		writeError(w, herr)
		return false
	}
	return true
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req chatRequest
	s.endpoint(w, r, p, &req, func() (*wire.Submit, *httpError) { return chatSubmit(&req, r) }, true)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req completionRequest
	s.endpoint(w, r, p, &req, func() (*wire.Submit, *httpError) { return completionSubmit(&req, r) }, false)
}

// apiRequest is a decoded request body of either endpoint.
type apiRequest interface {
	model() string
	fields() *samplingFields
}

func (c *chatRequest) model() string                 { return c.Model }
func (c *chatRequest) fields() *samplingFields       { return &c.samplingFields }
func (c *completionRequest) model() string           { return c.Model }
func (c *completionRequest) fields() *samplingFields { return &c.samplingFields }

// endpoint decodes a body into req, checks its model and serves the
// submit that build makes of it.
func (s *Server) endpoint(w http.ResponseWriter, r *http.Request, p ipc.Peer, req apiRequest,
	build func() (*wire.Submit, *httpError), chat bool) {
	if sub := s.submitOf(w, r, req, build); sub != nil {
		s.serve(w, r, p, sub, req.fields(), chat)
	}
}

// modelError is a backend's refusal in OpenAI's shape: not found can only
// be the model (the one thing a request looks up).
func modelError(err error) *httpError {
	herr := fromWire(err)
	if herr.code == wire.CodeNotFound {
		herr.typ, herr.param, herr.code = "invalid_request_error", "model", "model_not_found"
	}
	return herr
}

// counted runs fn under the user's cap on requests, for work that is not
// a stream (render, embeddings); a refusal is written and it reports false.
func (s *Server) counted(w http.ResponseWriter, p ipc.Peer, fn func() error) bool {
	if err := s.o.Users.AcquireUser(p); err != nil {
		writeError(w, fromWire(err))
		return false
	}
	err := fn()
	s.o.Users.ReleaseUser(p)
	if err != nil {
		writeError(w, modelError(err))
		return false
	}
	return true
}

// submitOf decodes a body into req, checks its model and builds its
// submit; on a refusal it writes the error and returns nil.
func (s *Server) submitOf(w http.ResponseWriter, r *http.Request, req apiRequest, build func() (*wire.Submit, *httpError)) *wire.Submit {
	if herr := s.decode(w, r, req); herr != nil {
		writeError(w, herr)
		return nil
	}
	if herr := s.checkModel(req.model()); herr != nil {
		writeError(w, herr)
		return nil
	}
	sub, herr := build()
	if herr != nil {
		writeError(w, herr)
		return nil
	}
	if _, many := s.o.Backend.(ipc.ModelLister); many {
		sub.Model = req.model()
	}
	return sub
}

// admit lets a request in: not while the model loads or the daemon drains
// (the msgpack socket holds a submit until it is ready; HTTP clients get
// llama.cpp's 503 and retry), and within the user's cap. It returns the
// release of the user's slot (safe to call twice), or nil after writing
// the refusal.
func (s *Server) admit(w http.ResponseWriter, p ipc.Peer) func() {
	if st := s.o.Backend.Health().State; st == "loading" || st == "draining" {
		w.Header().Set("Retry-After", "1")
		writeError(w, &httpError{status: http.StatusServiceUnavailable, typ: "unavailable_error", code: wire.CodeUnavailable,
			msg: "batchd is " + st + "; retry shortly"})
		return nil
	}
	if err := s.o.Users.AcquireUser(p); err != nil {
		writeError(w, fromWire(err))
		return nil
	}
	return sync.OnceFunc(func() { s.o.Users.ReleaseUser(p) })
}

// serve runs one request: it counts it against the user's cap, submits it,
// and answers (streamed or whole), always reading the stream to its end.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, p ipc.Peer, sub *wire.Submit, f *samplingFields, chat bool) {
	release := s.admit(w, p)
	if release == nil {
		return
	}
	defer release()
	st0, err := s.o.Backend.Submit(r.Context(), p, sub)
	if err != nil {
		writeError(w, modelError(err))
		return
	}
	st := releasing{st0, release}
	out := &answer{s: s, w: w, rc: http.NewResponseController(w), chat: chat, created: time.Now().Unix(), logprobs: sub.Logprobs,
		model: cmp.Or(sub.Model, s.o.Model),
		id:    fmt.Sprintf("%s-%d", map[bool]string{true: "chatcmpl", false: "cmpl"}[chat], st.RequestID())}
	w.Header().Set("X-Request-Id", fmt.Sprint(st.RequestID()))
	if f.Stream {
		out.stream(st, f.StreamOptions != nil && f.StreamOptions.IncludeUsage, func() {
			_ = s.o.Backend.Cancel(p, st.RequestID(), true)
		})
		return
	}
	var text, reasoning strings.Builder
	var lps []wire.Logprob
	for {
		ev, err := st.Next(context.Background())
		if err != nil {
			writeError(w, &httpError{status: http.StatusInternalServerError, typ: "server_error", msg: err.Error()})
			return
		}
		text.WriteString(ev.Text)
		reasoning.WriteString(ev.Reasoning)
		lps = append(lps, ev.Logprobs...)
		if ev.Done != nil {
			out.whole(text.String(), reasoning.String(), lps, ev.Done)
			return
		}
	}
}

// answer writes one request's response.
type answer struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	chat    bool
	id      string
	model   string // the model the request named, or the default's name
	created int64
	failed  bool // a write failed: the client is gone or too slow
	// logprobs: the request asked for them; offset is the completion's
	// text length so far (the legacy shape's text_offset).
	logprobs bool
	offset   int
}

// logprobsOf is a choice's logprobs field: nil unless asked.
func (a *answer) logprobsOf(lps []wire.Logprob) any {
	if !a.logprobs {
		return nil
	}
	if a.chat {
		return chatLogprobsOf(lps)
	}
	lp := completionLogprobsOf(lps, a.offset)
	for _, l := range lps {
		a.offset += len(l.Text)
	}
	return lp
}

func (a *answer) envelope(object string, choices any) response {
	return response{ID: a.id, Object: object, Created: a.created, Model: a.model, SystemFingerprint: "batchd",
		Choices: choices}
}

func usageOf(d *wire.Done) *usage {
	u := &usage{PromptTokens: d.Usage.PromptTokens, CompletionTokens: d.Usage.CompletionTokens,
		TotalTokens: d.Usage.PromptTokens + d.Usage.CompletionTokens}
	u.PromptTokensDetails = &promptTokensDetails{CachedTokens: d.Usage.CachedPromptTokens}
	return u
}

// stopReasonOf is the stop string that ended the text, or nil.
func stopReasonOf(d *wire.Done) *string {
	if d.StopSequence == "" {
		return nil
	}
	s := d.StopSequence
	return &s
}

// terminalError is the error of a request the server ended (a drain, an
// engine failure), or nil for one that finished.
func terminalError(d *wire.Done) *httpError {
	if d.FinishReason == "stop" || d.FinishReason == "length" || d.FinishReason == "tool_calls" {
		return nil
	}
	if d.Code == "" {
		d.Code, d.Message = wire.CodeUnavailable, "the request was "+d.FinishReason
	}
	return fromWire(&wire.Error{Code: d.Code, Message: d.Message})
}

func (a *answer) whole(text, reasoning string, lps []wire.Logprob, d *wire.Done) {
	if herr := terminalError(d); herr != nil {
		writeError(a.w, herr)
		return
	}
	finish := d.FinishReason
	var resp response
	if a.chat {
		m := &chatMessage{Role: "assistant", Content: &text, ReasoningContent: reasoning}
		if len(d.ToolCalls) > 0 {
			m.ToolCalls = toolCallsOf(d.ToolCalls)
			if text == "" {
				m.Content = nil // OpenAI's content of an answer that is only calls
			}
		}
		resp = a.envelope("chat.completion", []chatChoice{{Message: m, Logprobs: a.logprobsOf(lps), FinishReason: &finish,
			StopReason: stopReasonOf(d)}})
	} else {
		resp = a.envelope("text_completion", []completionChoice{{Text: text, Logprobs: a.logprobsOf(lps), FinishReason: &finish,
			StopReason: stopReasonOf(d)}})
	}
	resp.Usage = usageOf(d)
	_ = a.rc.SetWriteDeadline(time.Now().Add(a.s.o.WriteTimeout))
	writeJSON(a.w, http.StatusOK, resp)
}

// event writes one server-sent event and flushes it, within the write timeout.
func (a *answer) event(v any) {
	if a.failed {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":{"message":"encoding failed","type":"server_error"}}`)
	}
	_ = a.rc.SetWriteDeadline(time.Now().Add(a.s.o.WriteTimeout))
	if _, err := fmt.Fprintf(a.w, "data: %s\n\n", b); err != nil {
		a.failed = true
		return
	}
	if err := a.rc.Flush(); err != nil {
		a.failed = true
	}
}

func (a *answer) chunk(text *string, role string, finish *string, lps []wire.Logprob) response {
	var lp any
	if lps != nil {
		lp = a.logprobsOf(lps)
	}
	if a.chat {
		return a.envelope("chat.completion.chunk", []chatChoice{{Delta: &chatDelta{Role: role, Content: text}, Logprobs: lp, FinishReason: finish}})
	}
	t := ""
	if text != nil {
		t = *text
	}
	return a.envelope("text_completion", []completionChoice{{Text: t, Logprobs: lp, FinishReason: finish}})
}

// deltaChunk is a chunk of one event's deltas: content, reasoning and
// calls (chat), or text.
func (a *answer) deltaChunk(ev ipc.Event) response {
	text := ev.Text
	r := a.chunk(&text, "", nil, ev.Logprobs)
	if !a.chat {
		return r
	}
	d := r.Choices.([]chatChoice)[0].Delta
	if text == "" && (ev.Reasoning != "" || len(ev.ToolCalls) > 0) {
		d.Content = nil
	}
	if ev.Reasoning != "" {
		d.ReasoningContent = &ev.Reasoning
	}
	if len(ev.ToolCalls) > 0 {
		d.ToolCalls = toolDeltasOf(ev.ToolCalls)
	}
	return r
}

// stream answers with server-sent events: a role chunk (chat), a chunk per
// delta, a final chunk with finish_reason, a usage chunk if asked, then
// [DONE]. A client that stops reading gets its request cancelled.
func (a *answer) stream(st ipc.RequestStream, includeUsage bool, cancel func()) {
	h := a.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	a.w.WriteHeader(http.StatusOK)
	if a.chat {
		empty := ""
		a.event(a.chunk(&empty, "assistant", nil, nil))
	} else {
		_ = a.rc.Flush()
	}
	cancelled := false
	for {
		ev, err := st.Next(context.Background())
		if err != nil {
			a.event(map[string]apiError{"error": {Message: err.Error(), Type: "server_error"}})
			break
		}
		if a.failed && !cancelled {
			cancel()
			cancelled = true
		}
		if ev.Text != "" || len(ev.Logprobs) > 0 || ev.Reasoning != "" || len(ev.ToolCalls) > 0 {
			a.event(a.deltaChunk(ev))
		}
		if ev.Done == nil {
			continue
		}
		if herr := terminalError(ev.Done); herr != nil {
			a.event(herr.body())
		} else {
			finish := ev.Done.FinishReason
			last := a.chunk(nil, "", &finish, nil)
			if sr := stopReasonOf(ev.Done); sr != nil {
				switch c := last.Choices.(type) {
				case []chatChoice:
					c[0].StopReason = sr
				case []completionChoice:
					c[0].StopReason = sr
				}
			}
			a.event(last)
			if includeUsage {
				r := a.envelope(map[bool]string{true: "chat.completion.chunk", false: "text_completion"}[a.chat], []chatChoice{})
				r.Usage = usageOf(ev.Done)
				a.event(r)
			}
		}
		break
	}
	if !a.failed {
		_ = a.rc.SetWriteDeadline(time.Now().Add(a.s.o.WriteTimeout))
		if _, err := io.WriteString(a.w, "data: [DONE]\n\n"); err == nil {
			_ = a.rc.Flush()
		}
	}
}

// releasing gives the user's cap slot back as soon as the terminal event
// is read, before the last bytes go out: a client that sends its next
// request the moment it has its answer is not over its cap.
type releasing struct {
	ipc.RequestStream
	release func()
}

func (r releasing) Next(ctx context.Context) (ipc.Event, error) {
	ev, err := r.RequestStream.Next(ctx)
	if err == nil && ev.Done != nil {
		r.release()
	}
	return ev, err
}
