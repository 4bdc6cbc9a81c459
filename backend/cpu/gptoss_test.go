package cpu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

// gptOssFile is models/arch2's gpt-oss (MXFP4 experts, sinks, windows of
// 64 on even layers, YaRN, biases, swiglu_oai).
func gptOssFile(t *testing.T) string {
	return filepath.Join(testmodels.Dir(t), "arch2", "tiny-gpt-oss.gguf")
}

// TestGptOssMatchesLlamaCpp: the arch2 goldens on the MXFP4 file, on the
// int8 path (llama.cpp multiplies MXFP4 by 8-bit activations), with
// llama.cpp's tokens fed back. The short prompts agree to about 1e-6 but
// where an activation's 8-bit rounding flips; over the 371-token prompt
// such flips are many, and llama.cpp's own builds part there by as much
// (its haswell build, which made the goldens, and its sapphirerapids one
// differ by 2.5e-3 at the first step): within 0.05, and llama.cpp's
// greedy token wherever its top two are apart by more than that.
func TestGptOssMatchesLlamaCpp(t *testing.T) {
	goldens := testmodels.ArchGoldensFile(t, filepath.Join("arch2", "tiny-gpt-oss.golden.json"))
	m, err := model.Load(gptOssFile(t), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Layers[0].ExpUp[0].Type != quant.MXFP4 || m.Layers[0].Sinks == nil || !m.Config.Sliding(0) || m.Config.Sliding(1) {
		t.Fatalf("loaded %+v, experts %s", m.Config, m.Layers[0].ExpUp[0].Type)
	}
	b, err := New(m, backend.Options{NumBlocks: 64, BlockSize: 16, KV: backend.SameKV(quant.F32), QuantDot: "int8"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	nearGoldens(t, b, goldens, 0.05)
}

// nearGoldens runs each golden with llama.cpp's tokens fed back: top-5
// log-probabilities within bound, and llama.cpp's greedy token wherever
// its top two are further apart than that.
func nearGoldens(t *testing.T, b *Backend, goldens []testmodels.ArchGolden, bound float64) {
	t.Helper()
	for _, g := range goldens {
		worst := teacherForced(t, b, g, func(i int, logits []float32) {
			if next := sample.Argmax(logits); next != g.OutputTokens[i] && g.Gap12[i] > bound {
				t.Errorf("%.20q step %d: token %d, llama.cpp %d (its gap %.3g)", g.Prompt, i, next, g.OutputTokens[i], g.Gap12[i])
			}
		})
		t.Logf("%.20q (%d tokens): top-5 log-probabilities within %.2g", g.Prompt, len(g.PromptTokens), worst)
		if worst > bound {
			t.Errorf("%.20q: %.3g from llama.cpp's", g.Prompt, worst)
		}
	}
}

// TestGemma3MatchesLlamaCpp: models/arch2's gemma3 (five sliding layers of
// six, their own RoPE base, the global layer's linear scaling, per-head Q
// and K norms, gemma2's numerics), with llama.cpp's tokens fed back, within
// 2e-3. Not the 1e-3 of the arch tests: ggml's GELU reads a table by the
// input rounded to half, so inputs a float ulp apart can take neighbouring
// entries, and on this model (post-norm weights about 4) that moves
// log-probabilities by up to 1.3e-3 however the rest is computed
// (llama.cpp on variants of the file parts from batchd by 1e-4 to 1.1e-3,
// with and without the windows and the scaling).
func TestGemma3MatchesLlamaCpp(t *testing.T) {
	goldens := testmodels.ArchGoldensFile(t, filepath.Join("arch2", "tiny-gemma3.golden.json"))
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch2", "tiny-gemma3.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if c := m.Config; !c.Sliding(0) || !c.Sliding(4) || c.Sliding(5) || c.RopeThetaSWA != 10000 {
		t.Fatalf("loaded %+v", c)
	}
	b, err := New(m, backend.Options{NumBlocks: 64, BlockSize: 16, KV: backend.SameKV(quant.F32)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	nearGoldens(t, b, goldens, 2e-3)
}

// TestGptOssFloatMatchesLlamaCppLive: everything gpt-oss adds but MXFP4's
// arithmetic (sinks, the windows, YaRN, the biases, swiglu_oai, top 4
// softmaxed after the choice), on the file's F32 twin (llama.cpp
// dequantizes the experts), against llama.cpp on the twin: every golden
// prompt, the long one past the window too, within the arch tests' 1e-3.
func TestGptOssFloatMatchesLlamaCppLive(t *testing.T) {
	ref := liveRef(t)
	goldens := testmodels.ArchGoldensFile(t, filepath.Join("arch2", "tiny-gpt-oss.golden.json"))
	twin := filepath.Join(t.TempDir(), "twin.gguf")
	if err := ref.Quantize(gptOssFile(t), twin, 0, 2, true); err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(twin, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := New(m, backend.Options{NumBlocks: 64, BlockSize: 16, KV: backend.SameKV(quant.F32), QuantDot: "float"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := ref.LoadModel(twin, false); err != nil {
		t.Fatal(err)
	}
	if err := ref.Context(llamacpp.ContextOptions{Ctx: 1024, Batch: 1024}); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for _, g := range goldens {
		worst = max(worst, checkArchSteps(t, b, m, liveGolden(t, ref, g.PromptTokens, 16)))
	}
	t.Logf("top-5 log-probabilities within %.2g of llama.cpp's", worst)
}

// TestMXFP4MatchesLlamaCppLive: llama.cpp's MXFP4_MOE quantization of the
// twin's experts, byte for byte as batchd's quantizer writes them, and
// batchd's dequantization of the file's experts equal to llama.cpp's twin.
func TestMXFP4MatchesLlamaCppLive(t *testing.T) {
	ref := liveRef(t)
	dir := t.TempDir()
	twin, requant := filepath.Join(dir, "twin.gguf"), filepath.Join(dir, "mxfp4.gguf")
	if err := ref.Quantize(gptOssFile(t), twin, 0, 2, true); err != nil {
		t.Fatal(err)
	}
	const mxfp4MoE = 38 // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
	if err := ref.Quantize(twin, requant, mxfp4MoE, 2, false); err != nil {
		t.Fatal(err)
	}
	orig, err := model.Load(gptOssFile(t), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	f32, err := model.Load(twin, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f32.Close()
	qb, err := os.ReadFile(requant)
	if err != nil {
		t.Fatal(err)
	}
	q, err := gguf.Parse(qb)
	if err != nil {
		t.Fatal(err)
	}
	data := func(name string) ([]byte, bool) {
		tn, ok := q.Tensor(name)
		if !ok || tn.Type != gguf.Type(quant.MXFP4) {
			return nil, false
		}
		return qb[q.DataOffset+tn.Offset : q.DataOffset+tn.Offset+tn.Size], true
	}
	checked := 0
	for l := range f32.Layers {
		for name, ws := range map[string][2][]*model.Matrix{
			"ffn_gate_exps": {f32.Layers[l].ExpGate, orig.Layers[l].ExpGate},
			"ffn_down_exps": {f32.Layers[l].ExpDown, orig.Layers[l].ExpDown}} {
			want, ok := data(fmt.Sprintf("blk.%d.%s.weight", l, name))
			if !ok {
				t.Fatalf("blk.%d.%s: not MXFP4 in llama.cpp's file", l, name)
			}
			var got []byte
			for e, w := range ws[0] {
				rows := make([]float32, w.Rows*w.Cols)
				for r := range w.Rows {
					w.Row(r, rows[r*w.Cols:(r+1)*w.Cols])
				}
				out := make([]byte, quant.MXFP4.RowBytes(w.Cols)*w.Rows)
				quant.Lookup(quant.MXFP4).Quantize(rows, out)
				got = append(got, out...)
				o := ws[1][e] // the file's own MXFP4: dequantized, llama.cpp's twin
				for r := range o.Rows {
					a, b := make([]float32, o.Cols), make([]float32, o.Cols)
					o.Row(r, a)
					w.Row(r, b)
					if d := maxAbsDiff(a, b); d != 0 {
						t.Fatalf("layer %d %s expert %d row %d: dequantized %g from llama.cpp's", l, name, e, r, d)
					}
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("layer %d %s: batchd's MXFP4 bytes differ from llama.cpp's", l, name)
			}
			checked++
		}
	}
	t.Logf("%d expert tensors quantized byte for byte as llama.cpp does", checked)
}

// TestGptOssSynthMatchesLlamaCppLive: a gpt-oss file testing/synth writes
// (modelgen's benchmark shapes come from it: MXFP4 experts, sinks, the
// biases, YaRN) runs in llama.cpp, and batchd's int8 path gives its
// log-probabilities on short prompts.
func TestGptOssSynthMatchesLlamaCppLive(t *testing.T) {
	ref := liveRef(t)
	o := synth.Options{Arch: "gpt-oss", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 256, Vocab: 512,
		Context: 4096, DType: quant.F32, Seed: 13, Std: 0.08, Experts: 8, ExpertsUsed: 4, ExpertFFN: 256, RouterStd: 0.5}
	worst := synthAgainstLlamaCpp(t, ref, o, "int8", func(m *model.Model) {
		if m.Layers[0].ExpUp[0].Type != quant.MXFP4 || m.Layers[1].Sinks == nil || m.Layers[0].ExpDownB == nil {
			t.Fatalf("synth's gpt-oss: experts %s", m.Layers[0].ExpUp[0].Type)
		}
	}, [][]int{{1, 40, 99, 301, 7, 260}, {1, 500, 12, 12, 88, 430, 5, 61}})
	t.Logf("top-5 log-probabilities within %.2g of llama.cpp's", worst)
	if worst > 0.01 {
		t.Errorf("%.3g from llama.cpp's", worst)
	}
}

// synthAgainstLlamaCpp writes o with testing/synth, checks the loaded
// model, and returns the largest top-5 log-probability difference from the
// npm llama.cpp over prompts, teacher-forced 12 steps each, under quantDot.
func synthAgainstLlamaCpp(t *testing.T, ref *llamacpp.Ref, o synth.Options, quantDot string, check func(*model.Model),
	prompts [][]int) float64 {
	t.Helper()
	file, _ := synth.WriteFile(t, o)
	m, err := model.Load(file, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	check(m)
	b, err := New(m, backend.Options{NumBlocks: 32, BlockSize: 16, KV: backend.SameKV(quant.F32), QuantDot: quantDot})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := ref.LoadModel(file, false); err != nil {
		t.Fatal(err)
	}
	if err := ref.Context(llamacpp.ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for _, p := range prompts {
		worst = max(worst, teacherForced(t, b, liveGolden(t, ref, p, 12)))
	}
	return worst
}
