package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/batchd/batchd/engine/sched"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/tokenizer"
)

// embedRef is a models/embed reference: llama-server's tokens and pooled,
// L2-normalised vectors for each text.
type embedRef struct {
	Pooling string `json:"pooling"`
	Texts   []struct {
		Text      string    `json:"text"`
		Tokens    []int     `json:"tokens"`
		Embedding []float32 `json:"embedding"`
	} `json:"texts"`
	Tolerance struct {
		MaxAbs    float64 `json:"embedding_max_abs"`
		MinCosine float64 `json:"embedding_min_cosine"`
	} `json:"tolerance_recommended"`
}

func loadEmbedRef(t *testing.T, name string) (*model.Model, embedRef) {
	t.Helper()
	dir := filepath.Join(testmodels.Dir(t), "embed")
	b, err := os.ReadFile(filepath.Join(dir, name+".embed.json"))
	if err != nil {
		t.Skipf("no embedding reference: %v", err)
	}
	var ref embedRef
	if err := json.Unmarshal(b, &ref); err != nil || len(ref.Texts) == 0 || ref.Tolerance.MaxAbs == 0 {
		t.Fatalf("%s: %d texts, tolerance %g: %v", name, len(ref.Texts), ref.Tolerance.MaxAbs, err)
	}
	m, err := model.Load(filepath.Join(dir, name+".gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, ref
}

func embedOnce(e *Engine, toks []int, p Pooling) ([]float32, error) {
	st, err := e.Submit(context.Background(), Request{Tokens: toks, Embed: &Embed{Pooling: p, Normalize: true}})
	if err != nil {
		return nil, err
	}
	_, _, done, err := st.Wait(context.Background())
	if err != nil {
		return nil, err
	}
	if done.Finish != FinishStop || done.Usage.PromptTokens != len(toks) || done.Usage.CompletionTokens != 0 {
		return nil, fmt.Errorf("done %+v", done)
	}
	return done.Embedding, nil
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

func maxAbs(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range a {
		m = max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// TestEmbeddingsMatchLlamaCpp: the encoders (bert with CLS pooling,
// nomic-bert with MEAN) and Qwen 2 decoders with MEAN and LAST pooling give
// llama-server's vectors (F32 KV) within the references' tolerance on every
// text, alone; then all texts at once in a small step budget (decoders: in
// chunks, beside a running generation; encoders: each text whole, the long
// one alone over the budget), bit for bit the vectors they had alone.
func TestEmbeddingsMatchLlamaCpp(t *testing.T) {
	for _, name := range []string{"tiny-bert-bge", "tiny-nomic-bert", "tiny-qwen2-embed-mean", "tiny-qwen2-embed-last"} {
		t.Run(name, func(t *testing.T) {
			m, ref := loadEmbedRef(t, name)
			pool, err := ParsePooling(ref.Pooling)
			if err != nil {
				t.Fatal(err)
			}
			e := startEngine(t, m, engineOpts{kvType: quant.F32})
			alone := make([][]float32, len(ref.Texts))
			worst := 0.0
			defer func() { t.Logf("%d texts, max |diff| from llama.cpp %.2g", len(ref.Texts), worst) }()
			for i, tx := range ref.Texts {
				got, err := m.Tokenizer.Tokenize(context.Background(), tx.Text, tokenizer.Options{AddSpecial: true, ParseSpecial: true}) // as llama-server embeds
				if err != nil || !slices.Equal(got, tx.Tokens) {
					t.Fatalf("text %d %q: tokens %v, llama.cpp %v (%v)", i, tx.Text, got, tx.Tokens, err)
				}
				if alone[i], err = embedOnce(e, tx.Tokens, pool); err != nil {
					t.Fatal(err)
				}
				d := maxAbs(alone[i], tx.Embedding)
				if d > ref.Tolerance.MaxAbs {
					t.Errorf("text %d: max |diff| %g over %g", i, d, ref.Tolerance.MaxAbs)
				}
				if c := cosine(alone[i], tx.Embedding); ref.Tolerance.MinCosine > 0 && c < ref.Tolerance.MinCosine {
					t.Errorf("text %d: cosine %.8f under %g", i, c, ref.Tolerance.MinCosine)
				}
				worst = max(worst, d)
			}
			// Batched, chunked and beside a generation: the same bits.
			small := startEngine(t, m, engineOpts{kvType: quant.F32, sched: sched.Config{MaxNumBatchedTokens: 24, MaxPartialPrefills: 4}})
			var gen *Stream
			if m.Generates() {
				if gen, err = small.Submit(context.Background(), Request{Tokens: ref.Texts[3].Tokens, MaxTokens: 64, IgnoreEOS: true}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := small.Submit(context.Background(), Request{Tokens: ref.Texts[3].Tokens, MaxTokens: 4}); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("a generation on an encoder: %v, want ErrInvalidArgument", err)
			}
			var wg sync.WaitGroup
			batched := make([][]float32, len(ref.Texts))
			errs := make([]error, len(ref.Texts))
			for i, tx := range ref.Texts {
				wg.Add(1)
				go func() { defer wg.Done(); batched[i], errs[i] = embedOnce(small, tx.Tokens, pool) }()
			}
			wg.Wait()
			for i := range ref.Texts {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if !slices.Equal(batched[i], alone[i]) {
					t.Errorf("text %d batched: max |diff| %g from alone", i, maxAbs(batched[i], alone[i]))
				}
			}
			if gen == nil {
				return
			}
			if _, _, done, err := gen.Wait(context.Background()); err != nil || done.Usage.CompletionTokens != 64 {
				t.Errorf("the generation beside: %+v %v", done, err)
			}
		})
	}
}

// TestEmbeddingsMatchLlamaCppLive: every models/embed model's texts
// against llama.cpp v0.5.0 run now (F32 K and V), the same tokens and
// vectors within the references' tolerance.
func TestEmbeddingsMatchLlamaCppLive(t *testing.T) {
	r := llamacpp.New(t, llamacpp.Options{})
	poolings := map[string]int{"mean": llamacpp.PoolingMean, "cls": llamacpp.PoolingCLS, "last": llamacpp.PoolingLast}
	for _, name := range []string{"tiny-bert-bge", "tiny-nomic-bert", "tiny-qwen2-embed-mean", "tiny-qwen2-embed-last"} {
		t.Run(name, func(t *testing.T) {
			m, ref := loadEmbedRef(t, name)
			pool, err := ParsePooling(ref.Pooling)
			if err != nil {
				t.Fatal(err)
			}
			texts := make([]string, len(ref.Texts))
			for i, tx := range ref.Texts {
				texts[i] = tx.Text
			}
			want, toks, err := r.Embeddings(filepath.Join(testmodels.Dir(t), "embed", name+".gguf"), poolings[ref.Pooling], texts)
			if err != nil {
				t.Fatal(err)
			}
			e := startEngine(t, m, engineOpts{kvType: quant.F32})
			worst := 0.0
			for i, tx := range texts {
				got, err := m.Tokenizer.Tokenize(context.Background(), tx, tokenizer.Options{AddSpecial: true, ParseSpecial: true})
				if err != nil || !slices.Equal(got, toks[i]) {
					t.Fatalf("text %d: tokens %v, llama.cpp %v (%v)", i, got, toks[i], err)
				}
				v, err := embedOnce(e, got, pool)
				if err != nil {
					t.Fatal(err)
				}
				worst = max(worst, maxAbs(v, want[i]))
			}
			t.Logf("max |diff| from llama.cpp %s: %.2g (tolerance %g)", llamacpp.Release, worst, ref.Tolerance.MaxAbs)
			if worst > ref.Tolerance.MaxAbs {
				t.Errorf("max |diff| %g over %g", worst, ref.Tolerance.MaxAbs)
			}
		})
	}
}
