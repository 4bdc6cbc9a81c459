package cpu

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/tokenizer"
)

// TestFeaturesMatchLlamaCpp covers what the shared references never
// reach: a sliding window smaller than the sequence (gemma2's even layers;
// phi3's, which llama.cpp v0.5.0 ignores, and so must batchd) and RoPE
// scaling (yarn, linear). Each tiny model
// of models/arch is rewritten with the feature switched on, and llama.cpp
// (v0.5.0, F32 K and V, flash attention off), run on the same file, gives
// the greedy tokens and top-5 log-probabilities that batchd must match
// (within 1e-3; tokens equal unless llama.cpp's top two are within 1e-4).
func TestFeaturesMatchLlamaCpp(t *testing.T) {
	ref := llamacpp.New(t, llamacpp.Options{})
	dir := filepath.Join(testmodels.Dir(t), "arch")
	const prompt = "Once upon a time there was a little girl who lived in a village near the forest."
	for _, tc := range []struct {
		name, base string
		set        map[string]any
	}{
		{"phi3-window-8", "phi3", map[string]any{"phi3.attention.sliding_window": uint32(8)}},
		{"gemma2-window-8", "gemma2", map[string]any{"gemma2.attention.sliding_window": uint32(8)}},
		{"qwen2-yarn-4", "qwen2", map[string]any{"qwen2.rope.scaling.type": "yarn", "qwen2.rope.scaling.factor": float32(4),
			"qwen2.rope.scaling.original_context_length": uint32(64)}},
		{"mistral-linear-4", "mistral", map[string]any{"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": float32(4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name+".gguf")
			llamacpp.Rewrite(t, filepath.Join(dir, "tiny-"+tc.base+".gguf"), path, tc.set)
			m, err := model.Load(path, model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			toks, err := m.Tokenizer.Tokenize(context.Background(), prompt, tokenizer.Options{AddSpecial: true})
			if err != nil {
				t.Fatal(err)
			}
			const n = 24
			if _, err := ref.LoadModel(path, false); err != nil {
				t.Fatal(err)
			}
			if err := ref.Context(llamacpp.ContextOptions{}); err != nil {
				t.Fatal(err)
			}
			want, steps, err := ref.Greedy(0, toks, n, 5, true)
			if err != nil {
				t.Fatal(err)
			}
			top5 := make([][][2]float64, len(steps))
			for i, s := range steps {
				top5[i] = s
			}
			if len(want) != n || len(top5) != n {
				t.Fatalf("llama.cpp gave %d tokens, %d steps", len(want), len(top5))
			}
			b, err := New(m, backend.Options{NumBlocks: 16, BlockSize: 16, KV: backend.SameKV(quant.F32)})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			g := testmodels.ArchGolden{Prompt: prompt, PromptTokens: toks, OutputTokens: want, Top5: top5}
			for _, s := range top5 {
				g.Gap12 = append(g.Gap12, s[0][1]-s[1][1])
			}
			t.Logf("%d prompt tokens; largest top-5 log-probability difference %.2g", len(toks), checkArchSteps(t, b, m, g))
		})
	}
}
