package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/testing/testmodels"
)

type embedReference struct {
	Texts []struct {
		Text      string    `json:"text"`
		Tokens    []int     `json:"tokens"`
		Embedding []float32 `json:"embedding"`
	} `json:"texts"`
}

func readEmbedReference(t *testing.T, name string) embedReference {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "embed", name+".embed.json"))
	if err != nil {
		t.Skipf("no embedding reference: %v", err)
	}
	var ref embedReference
	if err := json.Unmarshal(b, &ref); err != nil || len(ref.Texts) == 0 {
		t.Fatalf("%s: %v", name, err)
	}
	return ref
}

// worstDiff compares float32 vectors, b as it came through JSON (the
// shortest decimal of each float32, read back as float32).
func worstDiff(a []float32, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	w := 0.0
	for i := range a {
		w = max(w, math.Abs(float64(a[i])-float64(float32(b[i]))))
	}
	return w
}

func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestEmbeddingsAPI: a decoder embedding model (mean pooling from its
// file) gives llama.cpp's vectors over msgpack, /v1/embeddings (the
// official OpenAI SDK, float and base64) and Ollama's /api/embed (its Go
// client); 300 inputs in one request; an over-long input is cut with
// truncate and refused without; dimensions keeps a normalised prefix.
func TestEmbeddingsAPI(t *testing.T) {
	ref := readEmbedReference(t, "tiny-qwen2-embed-mean")
	model := filepath.Join(testmodels.Dir(t), "embed", "tiny-qwen2-embed-mean.gguf")
	cfg := fmt.Sprintf("[engine]\nkv_cache_type = \"f32\"\n[models.short]\npath = %q\ncontext = 64\n", model)
	td := startDaemonFlags(t, cfg, ServeFlags{Model: model, HTTPSocket: "http"})
	ctx := context.Background()
	var texts []string
	for _, tx := range ref.Texts {
		texts = append(texts, tx.Text)
	}
	vecs, ptoks, err := td.dial(t).Embed(ctx, client.EmbedRequest{Input: texts})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i, tx := range ref.Texts {
		want += len(tx.Tokens)
		if d := worstDiff(vecs[i], f64s(tx.Embedding)); d > 1e-5 {
			t.Errorf("msgpack text %d: max |diff| %g", i, d)
		}
	}
	if ptoks != want {
		t.Errorf("prompt tokens %d, llama.cpp %d", ptoks, want)
	}

	oc := td.openai(t)
	resp, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny-qwen2-embed-mean",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range resp.Data {
		if w := worstDiff(vecs[i], d.Embedding); w != 0 {
			t.Errorf("/v1/embeddings text %d: %g from msgpack's", i, w)
		}
	}
	if int(resp.Usage.PromptTokens) != want {
		t.Errorf("usage %d, want %d", resp.Usage.PromptTokens, want)
	}
	b64, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny-qwen2-embed-mean",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(texts[1])}, EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64})
	if err != nil {
		t.Fatal(err)
	}
	if w := worstDiff(vecs[1], b64.Data[0].Embedding); w != 0 {
		t.Errorf("base64: %g from float", w)
	}
	dims, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny-qwen2-embed-mean",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(texts[1])}, Dimensions: openai.Int(16)})
	if err != nil {
		t.Fatal(err)
	}
	if v := dims.Data[0].Embedding; len(v) != 16 || math.Abs(norm64(v)-1) > 1e-6 {
		t.Errorf("dimensions 16: %d values, norm %g", len(v), norm64(v))
	}

	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf("input number %d of many", i)
	}
	out, _, err := td.dial(t).Embed(ctx, client.EmbedRequest{Input: many})
	if err != nil || len(out) != 300 {
		t.Fatalf("300 inputs: %d vectors, %v", len(out), err)
	}
	one, _, _ := td.dial(t).Embed(ctx, client.EmbedRequest{Input: many[123:124]})
	if worstDiff(out[123], f64s(one[0])) != 0 {
		t.Error("input 123 of 300 differs from itself alone")
	}

	long := strings.Repeat("word ", 200) // past "short"'s context of 64
	if _, n, err := td.dial(t).Embed(ctx, client.EmbedRequest{Model: "short", Input: []string{long}}); err != nil || n != 64 {
		t.Errorf("an over-long input, truncated: %d tokens, %v", n, err)
	}
	if _, _, err := td.dial(t).Embed(ctx, client.EmbedRequest{Model: "short", Input: []string{long}, NoTruncate: true}); !errors.Is(err, wire.ErrInvalidArgument) {
		t.Errorf("an over-long input without truncate: %v", err)
	}

	oll := td.ollama(t)
	er, err := oll.Embed(ctx, &api.EmbedRequest{Model: "tiny-qwen2-embed-mean", Input: texts[:3]})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if w := worstDiff(vecs[i], f64s(er.Embeddings[i])); w != 0 {
			t.Errorf("/api/embed %d: %g from msgpack's", i, w)
		}
	}
	legacy, err := oll.Embeddings(ctx, &api.EmbeddingRequest{Model: "tiny-qwen2-embed-mean", Prompt: texts[1]})
	if err != nil || len(legacy.Embedding) != len(vecs[1]) || math.Abs(norm64(legacy.Embedding)-1) < 1e-3 {
		t.Errorf("/api/embeddings: %d values, norm %g (want the raw pooled state), %v", len(legacy.Embedding), norm64(legacy.Embedding), err)
	}
	td.waitIdle(t)
}

func norm64(v []float64) float64 {
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	return math.Sqrt(ss)
}

// TestEmbedInputsCountAgainstTheCap: an embed of many inputs keeps at
// most the user's cap of them in the engine at once (2,048 inputs counted
// as one request before), gives the slots back, and a huge input with
// truncation on is cut before it is tokenized (its tokens are the first
// ones of the text).
func TestEmbedInputsCountAgainstTheCap(t *testing.T) {
	td := startSynthDaemon(t, "[server]\nmax_requests_per_user = 3\n")
	c := td.dial(t)
	inputs := make([]string, 48)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("%d %s", i, strings.Repeat("the quick brown fox ", 12))
	}
	eng := td.d.defaultModel().Engine
	stop := make(chan struct{})
	most := make(chan int, 1)
	go func() {
		m := 0
		for {
			select {
			case <-stop:
				most <- m
				return
			default:
			}
			s := eng.Stats()
			m = max(m, s.Running+s.Waiting)
		}
	}()
	vecs, _, err := c.Embed(context.Background(), client.EmbedRequest{Input: inputs})
	close(stop)
	if err != nil || len(vecs) != len(inputs) {
		t.Fatalf("%d vectors (%v)", len(vecs), err)
	}
	if m := <-most; m > 3 {
		t.Errorf("%d inputs in the engine at once; the cap is 3", m)
	}
	// The slots came back: three requests of the user fit again.
	for range 3 {
		if _, _, err := c.Embed(context.Background(), client.EmbedRequest{Input: []string{"again"}}); err != nil {
			t.Fatal(err)
		}
	}
	huge := "once upon a time " + strings.Repeat("x y ", 220<<10)
	vh, _, err := c.Embed(context.Background(), client.EmbedRequest{Input: []string{huge}})
	if err != nil {
		t.Fatal(err)
	}
	vs, _, err := c.Embed(context.Background(), client.EmbedRequest{Input: []string{huge[:100<<10]}})
	if err != nil {
		t.Fatal(err)
	}
	if worstDiff(vh[0], f64s(vs[0])) > 1e-6 {
		t.Error("a truncated input's vector differs from its first 100 KB's")
	}
}
