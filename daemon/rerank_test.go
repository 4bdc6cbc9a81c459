package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

// qwen3RerankTemplate has the shape of the rerank template llama.cpp's
// converter stores for Qwen3-Reranker (a system line, the instruction,
// query and document in a user turn, an empty think block).
const qwen3RerankTemplate = "<|im_start|>system\nJudge whether the Document answers the Query. Answer only \"yes\" or \"no\".<|im_end|>\n" +
	"<|im_start|>user\n<Instruct>: Given a query, find the passages that answer it\n<Query>: {query}\n<Document>: {document}<|im_end|>\n" +
	"<|im_start|>assistant\n<think>\n\n</think>\n\n"

// writeRerankers writes the two kinds of reranker llama.cpp runs: a BERT
// cross-encoder (BGE's WordPiece vocabulary; [CLS] pooled, a dense tanh
// layer and one logit, F16 as the converter writes it) and a
// Qwen3-Reranker (the last token after the final norm, yes/no rows, a
// softmax, the rerank template).
func writeRerankers(t *testing.T) (bert, qwen3 string) {
	dir := testmodels.Dir(t)
	raw, err := os.ReadFile(filepath.Join(dir, "embed", "ggml-vocab-bert-bge.gguf"))
	if err != nil {
		t.Skipf("no WordPiece vocabulary: %v", err)
	}
	vocab, err := gguf.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var enc bytes.Buffer
	o := synth.Options{Arch: "bert", Dim: 128, Layers: 2, Heads: 4, FFN: 256, Context: 512, DType: quant.F16, Seed: 31, Std: 0.05}
	if err := synth.WriteEncoder(&enc, o, vocab); err != nil {
		t.Fatal(err)
	}
	qwen, err := os.ReadFile(filepath.Join(dir, "arch", "tiny-qwen3.gguf"))
	if err != nil {
		t.Skipf("no tiny-qwen3: %v", err)
	}
	tmp := t.TempDir()
	write := func(name string, base []byte, ro synth.RankOptions) string {
		var out bytes.Buffer
		if err := synth.WriteReranker(&out, base, ro); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(tmp, name+".gguf")
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("bert-rerank", enc.Bytes(), synth.RankOptions{Dense: true, DType: quant.F16, Seed: 1}),
		write("qwen3-rerank", qwen, synth.RankOptions{Labels: []string{"yes", "no"}, Template: qwen3RerankTemplate, DType: quant.F32, Seed: 2})
}

// rerankRef is llama.cpp's score of each document (its pairing of query
// and document, its forward pass and head) and its token count.
func rerankRef(t *testing.T, ref *llamacpp.Ref, path, query string, docs []string) ([]float32, []int) {
	if _, err := ref.LoadModel(path, false); err != nil {
		t.Fatal(err)
	}
	if err := ref.Context(llamacpp.ContextOptions{Ctx: 1024, Batch: 1024, Embeddings: true, Pooling: llamacpp.PoolingModel}); err != nil {
		t.Fatal(err)
	}
	scores, lens := make([]float32, len(docs)), make([]int, len(docs))
	for i, d := range docs {
		toks, err := ref.RerankTokens(query, d)
		if err != nil {
			t.Fatal(err)
		}
		out, err := ref.Embed(toks)
		if err != nil {
			t.Fatal(err)
		}
		scores[i], lens[i] = out[0], len(toks)
	}
	return scores, lens
}

var rerankDocs = []string{
	"The capital of France is Paris, on the Seine.",
	"Photosynthesis turns light, water and carbon dioxide into sugar.",
	"Paris hosted the Olympic Games in 1900, 1924 and 2024.",
	"A B-tree keeps keys sorted and balanced for disk reads.",
	"Caf\u00e9 au lait, na\u00efve r\u00e9sum\u00e9s, \u6771\u4eac and numbers 3.14159.",
	strings.Repeat("A long passage about rivers, bridges and the cities built on them. ", 12),
}

// TestRerankMatchesLlamaCpp: both kinds of reranker, resident beside
// each other, score every document as llama.cpp v0.5.0 does (its pairing
// of query and document token for token, its score within 1e-3 for the
// F16 cross-encoder, 1e-5 for the F32 Qwen3 one), best first, through
// msgpack (Go client) and /v1/rerank (Jina's and Cohere's shape, with
// document objects, top_n and return_documents) and TEI's texts shape;
// a reranker refuses to generate or embed, and a chat model to rerank.
func TestRerankMatchesLlamaCpp(t *testing.T) {
	bert, qwen3 := writeRerankers(t)
	ref := llamacpp.New(t, llamacpp.Options{})
	query := "What is the capital of France?"
	want := map[string][]float32{}
	wantToks := map[string]int{}
	for name, path := range map[string]string{"bert-rerank": bert, "qwen3-rerank": qwen3} {
		s, lens := rerankRef(t, ref, path, query, rerankDocs)
		want[name] = s
		for _, n := range lens {
			wantToks[name] += n
		}
	}
	cfg := fmt.Sprintf("[engine]\nkv_cache_type = \"f32\"\n[models.bert-rerank]\npath = %q\n[models.qwen3-rerank]\npath = %q\n", bert, qwen3)
	td := startDaemonFlags(t, cfg, ServeFlags{Model: filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf"), HTTPSocket: "http"})
	ctx := context.Background()
	hc := unixHTTPClient(td.d.cfg.Server.HTTPSocket)
	for name, tol := range map[string]float64{"bert-rerank": 1e-3, "qwen3-rerank": 1e-5} {
		res, used, err := td.dial(t).Rerank(ctx, client.RerankRequest{Model: name, Query: query, Documents: rerankDocs})
		if err != nil {
			t.Fatal(err)
		}
		if used != wantToks[name] {
			t.Errorf("%s: %d prompt tokens, llama.cpp's pairs %d", name, used, wantToks[name])
		}
		worst := 0.0
		for i, r := range res {
			worst = max(worst, math.Abs(float64(r.Score-want[name][r.Index])))
			if i > 0 && r.Score > res[i-1].Score {
				t.Errorf("%s: result %d scores above the one before", name, i)
			}
		}
		t.Logf("%s: %d documents, max |diff| from llama.cpp %.2g (scores %v)", name, len(res), worst, want[name])
		if len(res) != len(rerankDocs) || worst > tol {
			t.Errorf("%s: %d results, max |diff| %g (tolerance %g)", name, len(res), worst, tol)
		}

		docs := make([]any, len(rerankDocs))
		for i, d := range rerankDocs {
			docs[i] = map[string]string{"text": d}
		}
		var jina struct {
			Results []struct {
				Index    int     `json:"index"`
				Score    float64 `json:"relevance_score"`
				Document struct {
					Text string `json:"text"`
				} `json:"document"`
			} `json:"results"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		decodeJSON(t, postJSON(t, hc, "/v1/rerank", map[string]any{"model": name, "query": query, "documents": docs, "top_n": 2, "return_documents": true}), &jina)
		if len(jina.Results) != 2 || jina.Results[0].Index != res[0].Index || jina.Results[0].Score != float64(res[0].Score) ||
			jina.Results[1].Document.Text != rerankDocs[res[1].Index] || jina.Usage.PromptTokens != used {
			t.Errorf("%s /v1/rerank top 2: %+v, msgpack's best %+v", name, jina, res[:2])
		}
		var tei []struct {
			Index int     `json:"index"`
			Score float64 `json:"score"`
			Text  string  `json:"text"`
		}
		decodeJSON(t, postJSON(t, hc, "/rerank", map[string]any{"model": name, "query": query, "texts": rerankDocs, "return_text": true}), &tei)
		best := float64(res[0].Score)
		if name == "bert-rerank" {
			best = 1 / (1 + math.Exp(-best)) // TEI's default sigmoid of a logit
		}
		if len(tei) != len(rerankDocs) || tei[0].Index != res[0].Index || math.Abs(tei[0].Score-best) > 1e-6 || tei[0].Text != rerankDocs[res[0].Index] {
			t.Errorf("%s TEI shape: %+v", name, tei[0])
		}
	}
	// A reranker neither generates nor embeds; a chat model does not rerank.
	if _, err := td.dial(t).Generate(ctx, client.Request{Model: "qwen3-rerank", Prompt: "hi", MaxTokens: 4}, nil); !errors.Is(err, wire.ErrInvalidArgument) {
		t.Errorf("generate on a reranker: %v", err)
	}
	if _, _, err := td.dial(t).Embed(ctx, client.EmbedRequest{Model: "bert-rerank", Input: []string{"hi"}}); !errors.Is(err, wire.ErrInvalidArgument) {
		t.Errorf("embed on a reranker: %v", err)
	}
	if _, _, err := td.dial(t).Rerank(ctx, client.RerankRequest{Query: "q", Documents: []string{"d"}}); !errors.Is(err, wire.ErrInvalidArgument) {
		t.Errorf("rerank on a chat model: %v", err)
	}
	for _, body := range []map[string]any{
		{"model": "bert-rerank", "documents": []string{"d"}},
		{"model": "bert-rerank", "query": "q", "documents": []string{}},
		{"model": "bert-rerank", "query": "q", "documents": []any{map[string]int{"title": 1}}},
		{"model": "bert-rerank", "query": "q", "documents": []string{"d"}, "top_n": 0},
		{"model": "bert-rerank", "query": "q", "documents": []string{"d"}, "rank_fields": []string{"title"}},
	} {
		postJSONStatus(t, hc, "/v1/rerank", body, http.StatusBadRequest)
	}
	td.waitIdle(t)
}

func decodeJSON(t *testing.T, raw []byte, out any) {
	t.Helper()
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
}
