package cpu

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

// kvQuantPairs are the K/V types checked against llama.cpp: both q8_0,
// both q4_0, and K and V apart (llama.cpp's -ctk q8_0 -ctv q4_0).
var kvQuantPairs = []backend.KVTypes{{K: quant.Q8_0, V: quant.Q8_0}, {K: quant.Q4_0, V: quant.Q4_0},
	{K: quant.Q8_0, V: quant.Q4_0}, {K: quant.Q5_0, V: quant.IQ4_NL}}

// kvQuantModels are the reference models whose heads a 32-value block
// format fits (head dim 32 or 64: llama.cpp rotates 64's), with the
// bound their top-5 log-probabilities keep from llama.cpp's. The dense
// qwen3 keeps the arch tests' 1e-3. On the others (random weights, made
// sensitive: a mixture's router, gemma3's post-norms of about 4, a
// recurrent state) the two engines' K and V, a float ulp apart before
// they are stored, round to neighbouring 8- or 4-bit levels here and
// there, and over the long prompts such flips add up to 1-2.4e-2
// (llama.cpp's own decode and prefill of one position part by 1.4e-3
// with q8_0 V): within 0.03. gpt-oss runs the int8 path its MXFP4
// experts take in llama.cpp, on its prompts within the window and the
// issue's three pairs: its 8-bit activations' flips (TestGptOssMatchesLlamaCpp)
// part the engines by more over its 371-token prompt and with q5_0/iq4_nl.
var kvQuantModels = []struct {
	file, quantDot string
	bound          float64
	pairs          int // the first pairs of kvQuantPairs checked
	maxPrompt      int
}{{"arch/tiny-qwen3", "float", 1e-3, 4, 1 << 20}, {"arch2/tiny-qwen3moe", "float", 0.03, 4, 1 << 20},
	{"arch2/tiny-gemma3", "float", 0.03, 4, 1 << 20}, {"arch2/tiny-gpt-oss", "int8", 0.05, 3, 64},
	{"arch2/tiny-qwen35", "float", 0.03, 4, 1 << 20}}

// TestQuantKVMatchesLlamaCppLive: K and V stored in ggml's block formats,
// against llama.cpp v0.5.0 run with the same -ctk/-ctv (flash attention
// on, which quantized V needs there), on every golden prompt with
// llama.cpp's tokens fed back: top-5 log-probabilities within the model's
// bound, and llama.cpp's greedy token wherever its top two are further
// apart than that.
func TestQuantKVMatchesLlamaCppLive(t *testing.T) {
	ref := liveRef(t)
	for _, tc := range kvQuantModels {
		path := filepath.Join(testmodels.Dir(t), tc.file+".gguf")
		var prompts [][]int
		for _, g := range testmodels.ArchGoldensFile(t, tc.file+".golden.json") {
			if len(g.PromptTokens) > 0 && len(g.PromptTokens) <= tc.maxPrompt {
				prompts = append(prompts, g.PromptTokens)
			}
		}
		m, err := model.Load(path, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.LoadModel(path, false); err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvQuantPairs[:tc.pairs] {
			t.Run(strings.TrimPrefix(filepath.Base(tc.file), "tiny-")+"/"+kv.String(), func(t *testing.T) {
				checkKVAgainstRef(t, ref, m, kv, tc.quantDot, prompts, tc.bound)
			})
		}
		m.Close()
	}
}

// TestQuantKVWideHeadsMatchLlamaCppLive: llama-shaped files with heads of
// 64 and 128 (llama.cpp rotates K by 64 and 128, V by 64) and 256 (K by
// 256), each K/V pair against llama.cpp as above, within 1e-3.
func TestQuantKVWideHeadsMatchLlamaCppLive(t *testing.T) {
	ref := liveRef(t)
	prompts := [][]int{{1, 500, 12, 12, 12, 88, 430, 5, 61, 270, 271, 300, 1, 40, 99, 301, 7, 260, 33, 44, 55}, {1, 7}}
	for _, hd := range []int{64, 128, 256} {
		o := synth.Options{Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: hd, FFN: 256, Vocab: 512,
			Context: 512, DType: quant.F32, Seed: uint64(hd), Std: 0.03}
		path, _ := synth.WriteFile(t, o)
		m, err := model.Load(path, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.LoadModel(path, false); err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvQuantPairs {
			t.Run(fmt.Sprintf("head%d/%s", hd, kv), func(t *testing.T) {
				checkKVAgainstRef(t, ref, m, kv, "float", prompts, 1e-3)
			})
		}
		m.Close()
	}
}

// checkKVAgainstRef runs each prompt for 16 steps in llama.cpp (the
// loaded model, K and V as kv) and checks batchd against it (nearGoldens).
func checkKVAgainstRef(t *testing.T, ref *llamacpp.Ref, m *model.Model, kv backend.KVTypes, quantDot string, prompts [][]int, bound float64) {
	t.Helper()
	b, err := New(m, backend.Options{NumBlocks: 32, BlockSize: 16, KV: kv, QuantDot: quantDot})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := ref.Context(llamacpp.ContextOptions{TypeK: int(kv.K), TypeV: int(kv.V), Flash: llamacpp.FlashOn}); err != nil {
		t.Fatal(err)
	}
	var goldens []testmodels.ArchGolden
	for _, p := range prompts {
		goldens = append(goldens, liveGolden(t, ref, p, 16))
	}
	nearGoldens(t, b, goldens, bound)
}

// TestQuantKVRefusesNarrowHeads: a head of 16 values cannot hold a
// 32-value block; the backend says so rather than storing K across heads.
func TestQuantKVRefusesNarrowHeads(t *testing.T) {
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = New(m, backend.Options{NumBlocks: 4, KV: backend.KVTypes{K: quant.F16, V: quant.Q8_0}})
	if err == nil || !strings.Contains(err.Error(), "multiple of 32") {
		t.Fatalf("q8_0 V on head dim %d: %v", m.Config.HeadDim, err)
	}
}
