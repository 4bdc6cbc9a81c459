package serve

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestQuantizedKVLoad: a model opened with K in q8_0 and V in q4_0 plans
// and serves in those types (a request runs to its end), names them in
// its plan, and its saved prefix cache takes another identity than the
// f16 store's, so that neither adopts the other's file; a type the store
// cannot hold for the model's heads is refused at load, naming it.
func TestQuantizedKVLoad(t *testing.T) {
	path, _ := synth.WriteFile(t, synth.Options{Dim: 128, Layers: 2, Heads: 2, KVHeads: 1, FFN: 96, Vocab: 300,
		Context: 256, DType: quant.F32, Seed: 3})
	spec := LoadSpec{Model: path, KVBlocks: 32, BlockSize: 16, KVCacheTypeK: "q8_0", KVCacheTypeV: "q4_0", CacheDir: t.TempDir()}
	lm, err := Open(spec, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	if got := lm.Plan.KVCacheType; got != "q8_0/q4_0" || lm.Plan.KVBytesPerToken != 2*(68+36) {
		t.Fatalf("plan: %s, %d bytes a token", got, lm.Plan.KVBytesPerToken)
	}
	h, err := lm.Engine.Submit(context.Background(), engine.Request{Tokens: []int{1, 5, 9, 40}, MaxTokens: 6, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, toks, _, err := h.Wait(context.Background()); err != nil || len(toks) != 6 {
		t.Fatalf("%d tokens generated (%v), want 6", len(toks), err)
	}
	_, q := cacheFileOf(spec, lm.Model, lm.backend, backend.KVTypes{K: quant.Q8_0, V: quant.Q4_0})
	_, f := cacheFileOf(spec, lm.Model, lm.backend, backend.SameKV(quant.F16))
	if q == f || !strings.Contains(q, "q8_0/q4_0") {
		t.Fatalf("cache identities %q and %q", q, f)
	}
	narrow := synth.TinyFile(t, 256) // heads of 16
	if _, err := Open(LoadSpec{Model: narrow, KVBlocks: 16, KVCacheType: "q4_0"}, slog.Default()); err == nil ||
		!strings.Contains(err.Error(), "q4_0") {
		t.Fatalf("q4_0 K/V on heads of 16: %v", err)
	}
}
