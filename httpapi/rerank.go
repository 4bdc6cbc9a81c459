package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"net/http"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// rerankRequest is the body of POST /v1/rerank and its aliases: Jina's
// and Cohere's shape (query, documents, top_n, return_documents), or
// Hugging Face TEI's (query, texts, return_text, raw_scores), as
// llama-server reads them.
type rerankRequest struct {
	Model           string            `json:"model"`
	Query           *string           `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	Texts           []string          `json:"texts"`
	TopN            *int              `json:"top_n"`
	ReturnDocuments bool              `json:"return_documents"`
	ReturnText      bool              `json:"return_text"`
	RawScores       *bool             `json:"raw_scores"`
	// Cohere's fields batchd cannot honour; refused by name when given.
	RankFields      json.RawMessage `json:"rank_fields"`
	MaxChunksPerDoc json.RawMessage `json:"max_chunks_per_doc"`
	MaxTokensPerDoc json.RawMessage `json:"max_tokens_per_doc"`
	// batchd's: the QoS channel and routing tags, as on completions.
	Channel string   `json:"channel"`
	Tags    []string `json:"tags"`
}

// documents reads the documents: strings, or objects with a text field
// (Jina's and Cohere v1's).
func (req *rerankRequest) documents() ([]string, *httpError) {
	if req.Texts != nil {
		if req.Documents != nil {
			return nil, errInvalid("texts", "give documents or texts, not both")
		}
		return req.Texts, nil
	}
	out := make([]string, len(req.Documents))
	for i, raw := range req.Documents {
		var doc struct {
			Text *string `json:"text"`
		}
		raw = bytes.TrimSpace(raw)
		switch {
		case json.Unmarshal(raw, &out[i]) == nil:
		case len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &doc) == nil && doc.Text != nil:
			out[i] = *doc.Text
		default:
			return nil, errInvalid("documents", "documents[%d]: want a string or an object with a text string", i)
		}
	}
	return out, nil
}

// rerank scores documents against a query. The score is the reranker's
// first output as llama-server gives it (a cross-encoder's logit,
// Qwen3-Reranker's probability of yes); TEI's shape turns a logit into a
// probability (a sigmoid) unless raw_scores is true, as TEI does.
func (s *Server) rerank(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	rr, ok := s.o.Backend.(ipc.Reranker)
	if !ok {
		writeError(w, &httpError{status: http.StatusNotImplemented, typ: "invalid_request_error", msg: "this server reranks nothing"})
		return
	}
	var req rerankRequest
	if !s.read(w, r, &req, func() string { return req.Model }) {
		return
	}
	docs, herr := req.documents()
	for name, v := range map[string]json.RawMessage{"rank_fields": req.RankFields, "max_chunks_per_doc": req.MaxChunksPerDoc,
		"max_tokens_per_doc": req.MaxTokensPerDoc} {
		if len(v) > 0 && string(v) != "null" {
			herr = errInvalid(name, "%s: not supported; send each document's text", name)
		}
	}
	switch {
	case herr != nil:
	case req.Query == nil:
		herr = errInvalid("query", "query: required, a string")
	case len(docs) == 0:
		herr = errInvalid("documents", "documents: required, a non-empty array")
	case req.TopN != nil && *req.TopN < 1:
		herr = errInvalid("top_n", "top_n %d: want at least 1", *req.TopN)
	}
	if herr != nil {
		writeError(w, herr)
		return
	}
	m := &wire.Rerank{Type: wire.TypeRerank, Query: *req.Query, Documents: docs, Channel: req.Channel, Tags: req.Tags}
	if _, many := s.o.Backend.(ipc.ModelLister); many {
		m.Model = req.Model
	}
	if req.TopN != nil {
		m.TopN = *req.TopN
	}
	var res *wire.Rerank
	if !s.counted(w, p, func() (err error) { res, err = rr.Rerank(r.Context(), p, m); return err }) {
		return
	}
	if req.Texts != nil { // TEI: a bare array
		out := make([]map[string]any, len(res.Results))
		for i, x := range res.Results {
			score := float64(x.Score)
			if !res.Probabilities && (req.RawScores == nil || !*req.RawScores) {
				score = 1 / (1 + math.Exp(-score))
			}
			out[i] = map[string]any{"index": x.Index, "score": score}
			if req.ReturnText {
				out[i]["text"] = docs[x.Index]
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	results := make([]map[string]any, len(res.Results))
	for i, x := range res.Results {
		results[i] = map[string]any{"index": x.Index, "relevance_score": float64(x.Score)}
		if req.ReturnDocuments {
			results[i]["document"] = map[string]string{"text": docs[x.Index]}
		}
	}
	usage := map[string]int{"prompt_tokens": res.PromptTokens, "total_tokens": res.PromptTokens}
	writeJSON(w, http.StatusOK, map[string]any{"id": "rerank-" + ipc.RandomHex(16), "object": "list", "model": cmp.Or(req.Model, res.Model, s.o.Model),
		"results": results, "usage": usage, "meta": map[string]any{"billed_units": map[string]int{"input_tokens": res.PromptTokens}}})
}
