package cpu

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/engine/backend"
	"github.com/batchd/batchd/engine/model"
	"github.com/batchd/batchd/engine/quant"
	"github.com/batchd/batchd/engine/tokenizer"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestFeaturesMatchLlamaCppServer covers what the shared references never
// reach: a sliding window smaller than the sequence (phi3 on every layer,
// gemma2 on even ones) and RoPE scaling (yarn, linear). Each tiny model
// of models/arch is rewritten with the feature switched on, and llama.cpp's
// own llama-server, run on the same file, gives the greedy tokens and
// top-5 log-probabilities that batchd must match (within 1e-3; tokens
// equal unless llama.cpp's top two are within 1e-4).
func TestFeaturesMatchLlamaCppServer(t *testing.T) {
	llamacpp.Bin(t)
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
			want, top5 := llamacpp.Start(t, path).Complete(t, toks, n)
			if len(want) != n || len(top5) != n {
				t.Fatalf("llama.cpp gave %d tokens, %d steps", len(want), len(top5))
			}
			b, err := New(m, backend.Options{NumBlocks: 16, BlockSize: 16, KVType: quant.F32})
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
