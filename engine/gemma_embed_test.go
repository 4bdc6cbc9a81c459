package engine

import (
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/synth"
)

// TestGemmaEmbeddingMatchesLlamaCpp: EmbeddingGemma's shape
// (gemma-embedding: gemma3's block, bidirectional, sliding layers seeing
// half their window either side, mean pooling, then dense_2 and dense_3),
// written here with a window of 16, embeds texts of 5 to 120 tokens as
// llama.cpp v0.5.0 does (its pooled vector, normalised), alone and all at
// once. A causal mask, a one-sided window or the dense layers left out
// each cost more than 0.05.
func TestGemmaEmbeddingMatchesLlamaCpp(t *testing.T) {
	ref := llamacpp.New(t, llamacpp.Options{})
	o := synth.Options{Arch: "gemma-embedding", Dim: 128, Layers: 6, Heads: 4, KVHeads: 2, FFN: 256, Vocab: 512,
		Context: 512, DType: quant.F32, Seed: 31, Std: 0.05, Gemma: synth.GemmaOptions{Window: 16, Dense: 256}}
	path, _ := synth.WriteFile(t, o)
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if c := m.Config; !c.NonCausal || !c.SymmetricWindow || c.SlidingLayers() != 5 || len(m.Dense) != 2 || m.Generates() {
		t.Fatalf("loaded as causal %v, symmetric %v, %d sliding layers, %d dense layers, generates %v",
			!c.NonCausal, c.SymmetricWindow, c.SlidingLayers(), len(m.Dense), m.Generates())
	}
	if _, err := ref.LoadModel(path, false); err != nil {
		t.Fatal(err)
	}
	if err := ref.Context(llamacpp.ContextOptions{Ctx: 512, Batch: 512, Embeddings: true, Pooling: llamacpp.PoolingModel}); err != nil {
		t.Fatal(err)
	}
	var texts [][]int
	for _, n := range []int{5, 17, 40, 120} {
		toks := []int{1}
		for i := range n - 1 {
			toks = append(toks, 3+(i*97+n*13)%500)
		}
		texts = append(texts, toks)
	}
	e := startEngine(t, m, engineOpts{blocks: 64, sched: sched.Config{MaxNumBatchedTokens: 256}})
	worst := 0.0
	for _, toks := range texts {
		want, err := ref.Embed(toks)
		if err != nil {
			t.Fatal(err)
		}
		Normalize(want)
		got, err := embedOnce(e, toks, PoolMean)
		if err != nil {
			t.Fatal(err)
		}
		d := maxAbs(got, want)
		worst = math.Max(worst, d)
		if d > 1e-4 {
			t.Errorf("%d tokens: max |diff| %.3g from llama.cpp (cosine %.6f)", len(toks), d, cosine(got, want))
		}
	}
	t.Logf("%d texts of 5 to 120 tokens: max |diff| from llama.cpp %.2g", len(texts), worst)
	got := make([][]float32, len(texts))
	var wg sync.WaitGroup
	for i, toks := range texts {
		wg.Go(func() { got[i], _ = embedOnce(e, toks, PoolMean) })
	}
	wg.Wait()
	for i, toks := range texts {
		if alone, err := embedOnce(e, toks, PoolMean); err != nil || !slices.Equal(alone, got[i]) {
			t.Errorf("text %d: all at once differs from alone (%v)", i, err)
		}
	}
}
