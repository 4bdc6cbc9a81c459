package cpu

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/testmodels"
)

// liveRef starts llama.cpp v0.5.0 with the ggml build of the instruction
// set this backend runs: AVX-512 as the CPU allows, or haswell (AVX2) under
// the tag noavx512, so both sides run one machine's other path too.
func liveRef(t *testing.T) *llamacpp.Ref {
	t.Helper()
	o := llamacpp.Options{}
	if maskAVX512 {
		o.Variant = "haswell"
	}
	return llamacpp.New(t, o)
}

// liveGolden is llama.cpp's greedy run of prompt on the loaded model (F32
// K and V, flash attention off) as a golden.
func liveGolden(t *testing.T, ref *llamacpp.Ref, prompt []int, n int) testmodels.ArchGolden {
	t.Helper()
	toks, top, err := ref.Greedy(0, prompt, n, 5, false)
	if err != nil {
		t.Fatal(err)
	}
	g := testmodels.ArchGolden{PromptTokens: prompt, OutputTokens: toks}
	for _, s := range top {
		g.Top5 = append(g.Top5, s)
		g.Gap12 = append(g.Gap12, s[0][1]-s[1][1])
	}
	return g
}

// TestArchMatchesLlamaCppLive: every models/arch model on its golden
// prompts, against llama.cpp v0.5.0 run now (the stored goldens came from
// an older build): top-5 log-probabilities within 1e-3, tokens equal but
// at near ties.
func TestArchMatchesLlamaCppLive(t *testing.T) {
	ref := liveRef(t)
	for _, arch := range testmodels.ArchModels {
		t.Run(arch, func(t *testing.T) {
			path := filepath.Join(testmodels.Dir(t), "arch", "tiny-"+arch+".gguf")
			m, err := model.Load(path, model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			b, err := New(m, backend.Options{NumBlocks: 16, BlockSize: 16, KV: backend.SameKV(quant.F32)})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if _, err := ref.LoadModel(path, false); err != nil {
				t.Fatal(err)
			}
			if err := ref.Context(llamacpp.ContextOptions{}); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for _, g := range testmodels.ArchGoldens(t, arch) {
				if len(g.PromptTokens) == 0 {
					continue
				}
				lg := liveGolden(t, ref, g.PromptTokens, 24)
				lg.Prompt = g.Prompt
				worst = max(worst, checkArchSteps(t, b, m, lg))
			}
			t.Logf("largest top-5 log-probability difference from llama.cpp %s: %.2g", llamacpp.Release, worst)
		})
	}
}

// TestQuantMatchesLlamaCppLive: every models/quant file, computed in float
// from its exactly dequantized weights, against llama.cpp v0.5.0 on the
// file's dequantized twin (which llama.cpp writes now), as the stored
// quant goldens were made.
func TestQuantMatchesLlamaCppLive(t *testing.T) {
	ref := liveRef(t)
	dir := filepath.Join(testmodels.Dir(t), "quant")
	files, _ := filepath.Glob(filepath.Join(dir, "tiny-quant-*.gguf"))
	for _, p := range files {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		t.Run(strings.TrimPrefix(name, "tiny-quant-"), func(t *testing.T) {
			var prompts []struct {
				Tokens []int `json:"prompt_tokens"`
			}
			b, err := os.ReadFile(filepath.Join(dir, name+".dequant-f32.golden.json"))
			if err != nil || json.Unmarshal(b, &prompts) != nil {
				t.Skipf("no golden prompts for %s", name)
			}
			twin := filepath.Join(t.TempDir(), "twin.gguf")
			if err := ref.Quantize(p, twin, 0, 2, true); err != nil {
				t.Fatal(err)
			}
			if _, err := ref.LoadModel(twin, false); err != nil {
				t.Fatal(err)
			}
			if err := ref.Context(llamacpp.ContextOptions{}); err != nil {
				t.Fatal(err)
			}
			m, err := model.Load(p, model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			be, err := New(m, backend.Options{NumBlocks: 16, BlockSize: 16, KV: backend.SameKV(quant.F32), QuantDot: "float"})
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			worst := 0.0
			for _, pr := range prompts {
				if len(pr.Tokens) > 0 {
					worst = max(worst, checkArchSteps(t, be, m, liveGolden(t, ref, pr.Tokens, 24)))
				}
			}
			t.Logf("largest top-5 log-probability difference: %.2g", worst)
		})
	}
}
