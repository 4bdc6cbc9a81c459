package httpapi

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// embeddingRequest is OpenAI's POST /v1/embeddings body.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
	// batchd's: the QoS channel and routing tags, as on completions.
	Channel string   `json:"channel"`
	Tags    []string `json:"tags"`
}

// embedInput reads input: a string, an array of strings, an array of
// token ids, or an array of such arrays.
func embedInput(raw json.RawMessage, e *wire.Embed) *httpError {
	raw = bytes.TrimSpace(raw)
	var s string
	var ss []string
	var ids []int
	var idss [][]int
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return errInvalid("input", "input: required")
	case json.Unmarshal(raw, &s) == nil:
		e.Input = []string{s}
	case json.Unmarshal(raw, &ss) == nil:
		e.Input = ss
	case json.Unmarshal(raw, &ids) == nil:
		e.Tokens = [][]int{ids}
	case json.Unmarshal(raw, &idss) == nil:
		e.Tokens = idss
	default:
		return errInvalid("input", "input: want a string, an array of strings, token ids or arrays of token ids")
	}
	if len(e.Input)+len(e.Tokens) == 0 {
		return errInvalid("input", "input: empty")
	}
	return nil
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	eb, ok := s.o.Backend.(ipc.Embedder)
	if !ok {
		writeError(w, &httpError{status: http.StatusNotImplemented, typ: "invalid_request_error", msg: "this server computes no embeddings"})
		return
	}
	var req embeddingRequest
	if !s.read(w, r, &req, func() string { return req.Model }) {
		return
	}
	e := &wire.Embed{Type: wire.TypeEmbed, Channel: req.Channel, Tags: req.Tags}
	if _, many := s.o.Backend.(ipc.ModelLister); many {
		e.Model = req.Model
	}
	if herr := embedInput(req.Input, e); herr != nil {
		writeError(w, herr)
		return
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		writeError(w, errInvalid("encoding_format", "encoding_format %q: want float or base64", req.EncodingFormat))
		return
	}
	if req.Dimensions != nil {
		if *req.Dimensions < 1 {
			writeError(w, errInvalid("dimensions", "dimensions %d: want at least 1", *req.Dimensions))
			return
		}
		e.Dimensions = *req.Dimensions
	}
	var res *wire.Embed
	if !s.counted(w, p, func() (err error) { res, err = eb.Embed(r.Context(), p, e); return err }) {
		return
	}
	data := make([]map[string]any, len(res.Embeddings))
	for i, v := range res.Embeddings {
		var emb any = v
		if req.EncodingFormat == "base64" { // little-endian float32s, as OpenAI's SDKs decode them
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			emb = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": cmp.Or(req.Model, s.o.Model),
		"usage": map[string]int{"prompt_tokens": res.PromptTokens, "total_tokens": res.PromptTokens}})
}
