package ollama

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// embed is Ollama's POST /api/embed: input a string or an array of them,
// unit vectors, truncate (default true), dimensions.
func (a *API) embed(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	start := time.Now()
	var req struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Truncate   *bool           `json:"truncate"`
		Dimensions int             `json:"dimensions"`
		KeepAlive  json.RawMessage `json:"keep_alive"`
		Options    map[string]any  `json:"options"`
	}
	if !decode(w, r, &req) {
		return
	}
	e := &wire.Embed{Type: wire.TypeEmbed, Model: req.Model, Truncate: req.Truncate, Dimensions: req.Dimensions}
	var one string
	switch {
	case req.Model == "":
		writeError(w, http.StatusBadRequest, "model is required")
		return
	case json.Unmarshal(req.Input, &one) == nil:
		e.Input = []string{one}
	case json.Unmarshal(req.Input, &e.Input) == nil && len(e.Input) > 0:
	default:
		writeError(w, http.StatusBadRequest, "input: want a string or an array of strings")
		return
	}
	res, ok := a.runEmbed(w, p, r, e, req.KeepAlive)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": req.Model, "embeddings": res.Embeddings,
		"total_duration": int64(time.Since(start)), "load_duration": 0, "prompt_eval_count": res.PromptTokens})
}

// embeddingsLegacy is Ollama's older POST /api/embeddings: one prompt, the
// pooled vector as the model gives it (not normalised, as Ollama's).
func (a *API) embeddingsLegacy(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req struct {
		Model     string          `json:"model"`
		Prompt    string          `json:"prompt"`
		KeepAlive json.RawMessage `json:"keep_alive"`
		Options   map[string]any  `json:"options"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}
	no := false
	e := &wire.Embed{Type: wire.TypeEmbed, Model: req.Model, Input: []string{req.Prompt}, Normalize: &no}
	res, ok := a.runEmbed(w, p, r, e, req.KeepAlive)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"embedding": res.Embeddings[0]})
}

func (a *API) runEmbed(w http.ResponseWriter, p ipc.Peer, r *http.Request, e *wire.Embed, rawKA json.RawMessage) (*wire.Embed, bool) {
	ka, err := keepAlive(rawKA)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	e.KeepAlive = ka
	if err := a.users.AcquireUser(p); err != nil {
		writeWireError(w, err, e.Model)
		return nil, false
	}
	defer a.users.ReleaseUser(p)
	res, err := a.b.Embed(r.Context(), p, e)
	if err != nil {
		writeWireError(w, err, e.Model)
		return nil, false
	}
	return res, true
}
