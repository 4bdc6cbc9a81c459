package httpapi

import (
	"cmp"
	"fmt"
	"net/http"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// The render endpoints answer with the token ids a request would run, as
// vLLM's do (vllm/entrypoints/serve/render: POST /v1/chat/completions/render
// gives one GenerateRequest-shaped object with token_ids, POST
// /v1/completions/render a list of them, one per prompt); llm-d's endpoint
// picker calls them to hash a prompt's blocks exactly as the engine will.
// The ids are the daemon's own: the same rendering, tool polyfills and
// tokenization a submit goes through, and nothing runs.

// rendered is one prompt's answer.
type rendered struct {
	RequestID string `json:"request_id"`
	Model     string `json:"model"`
	TokenIDs  []int  `json:"token_ids"`
	Stream    bool   `json:"stream"`
}

func (s *Server) renderChat(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req chatRequest
	s.render(w, r, p, &req, func() (*wire.Submit, *httpError) { return chatSubmit(&req, r) }, false)
}

func (s *Server) renderCompletion(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req completionRequest
	s.render(w, r, p, &req, func() (*wire.Submit, *httpError) { return completionSubmit(&req, r) }, true)
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, p ipc.Peer, req apiRequest,
	build func() (*wire.Submit, *httpError), list bool) {
	rd, ok := s.o.Backend.(ipc.Renderer)
	if !ok {
		writeError(w, &httpError{status: http.StatusNotFound, typ: "invalid_request_error", msg: "this server does not render"})
		return
	}
	sub := s.submitOf(w, r, req, build)
	if sub == nil {
		return
	}
	// Rendering runs the chat template and the tokenizer: it counts
	// against the user's cap as a request does.
	var ids []int
	if !s.counted(w, p, func() (err error) { ids, err = rd.Render(r.Context(), p, sub); return err }) {
		return
	}
	if ids == nil {
		ids = []int{}
	}
	one := rendered{RequestID: fmt.Sprintf("render-%d", s.renders.Add(1)), Model: cmp.Or(sub.Model, s.o.Model),
		TokenIDs: ids}
	if list {
		writeJSON(w, http.StatusOK, []rendered{one})
		return
	}
	writeJSON(w, http.StatusOK, one)
}
