package cpu

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestHybridSynthMatchesLlamaCppLive: Gated DeltaNet hybrids that
// testing/synth writes (qwen35 dense, qwen35moe with a gated shared expert;
// heads of 32, two V heads per K head, partial M-RoPE) agree with the npm
// llama.cpp step by step, over a prompt long enough that the recurrent
// state carries far.
func TestHybridSynthMatchesLlamaCppLive(t *testing.T) {
	ref := liveRef(t)
	long := make([]int, 150)
	for i := range long {
		long[i] = 3 + (i*37+11)%500
	}
	for _, o := range []synth.Options{
		{Arch: "qwen35", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 256, Vocab: 512, Context: 4096,
			DType: quant.F32, Seed: 21, Std: 0.08, SSM: synth.SSMOptions{State: 32, Groups: 2, VHeads: 4}},
		{Arch: "qwen35moe", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 256, Vocab: 512, Context: 4096,
			DType: quant.F32, Seed: 22, Std: 0.08, SSM: synth.SSMOptions{State: 32, Groups: 2, VHeads: 4},
			Experts: 8, ExpertsUsed: 2, ExpertFFN: 256, SharedFFN: 256, RouterStd: 0.5},
	} {
		t.Run(o.Arch, func(t *testing.T) {
			worst := synthAgainstLlamaCpp(t, ref, o, "", func(m *model.Model) {
				if !m.Config.Recurrent.Layer(0) || m.Config.Recurrent.Layer(3) || m.Layers[0].SSM == nil {
					t.Fatalf("synth's %s: recurrent %+v", o.Arch, m.Config.Recurrent)
				}
			}, [][]int{{1, 40, 99, 301, 7, 260}, long})
			t.Logf("top-5 log-probabilities within %.2g of llama.cpp's", worst)
			if worst > 2e-4 {
				t.Errorf("%.3g from llama.cpp's", worst)
			}
		})
	}
}

// TestHybridChunksMatchOneByOne: a Gated DeltaNet hybrid's prompt
// prefilled in chunks of 3 to 24 tokens gives the logits it gives fed one
// token at a time, bit for bit (slidingLogits: attention_test.go).
func TestHybridChunksMatchOneByOne(t *testing.T) {
	path, _ := synth.WriteFile(t, synth.Options{Arch: "qwen35", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64,
		FFN: 256, Vocab: 512, Context: 512, DType: quant.F32, Seed: 23, Std: 0.08, SSM: synth.SSMOptions{State: 32, Groups: 2, VHeads: 4}})
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt := make([]int, 41)
	for i := range prompt {
		prompt[i] = 3 + (i*37+11)%500
	}
	opts := backend.Options{NumBlocks: 4, BlockSize: 16, KV: backend.SameKV(quant.F16)}
	table := []int{2, 0, 3}
	chunks := slidingLogits(t, m, opts, prompt, table, func(pos int) int { return max(3, pos) })
	ones := slidingLogits(t, m, opts, prompt, table, func(int) int { return 1 })
	for i := range chunks {
		if math.Float32bits(chunks[i]) != math.Float32bits(ones[i]) {
			t.Fatalf("logit %d: %v prefilled in chunks, %v one token at a time", i, chunks[i], ones[i])
		}
	}
}

// TestRollingSnapshots: a sequence that passes block after block keeps one
// rolling state (each replacing the last, its buffers reused) beside its
// kept ones, and another sequence restored from the latest computes what
// the first computes from there; one restored from the state kept within
// the first's prompt computes the prompt's last logits again.
func TestRollingSnapshots(t *testing.T) {
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch2", "tiny-qwen35.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := New(m, backend.Options{NumBlocks: 16, BlockSize: 16, KV: backend.SameKV(quant.F32)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	toks := make([]int, 70)
	for i := range toks {
		toks[i] = 100 + 13*i
	}
	blocks := []int{0, 1, 2, 3, 4}
	key := func(at int) backend.StateID { return backend.StateID{byte(at)} }
	step := func(in backend.SeqInput) []float32 {
		t.Helper()
		out, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{in}})
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), out[0]...)
	}
	first := step(backend.SeqInput{Tokens: toks[:20], Blocks: blocks, Logits: true, Seq: 1, Snapshots: []backend.StateKey{{At: 16, Key: key(16)}}})
	// The state kept within that prompt, at 16, gives its last logits again.
	k16 := key(16)
	again := step(backend.SeqInput{Tokens: toks[16:20], Pos: 16, Blocks: []int{0, 5}, Logits: true, Seq: 3, Restore: &k16})
	for i := range first {
		if math.Float32bits(first[i]) != math.Float32bits(again[i]) {
			t.Fatalf("logit %d: %g through the prompt, %g resumed at 16", i, first[i], again[i])
		}
	}
	var last []float32
	for p := 20; p < 70; p++ {
		in := backend.SeqInput{Tokens: toks[p : p+1], Pos: p, Blocks: blocks, Logits: true, Seq: 1}
		if (p+1)%16 == 0 {
			in.Snapshots = []backend.StateKey{{At: p + 1, Key: key(p + 1), Rolling: true}}
		}
		last = step(in)
	}
	if b.Snapshots() != 2 || !b.HasSnapshot(key(16)) || b.HasSnapshot(key(32)) || b.HasSnapshot(key(48)) || !b.HasSnapshot(key(64)) {
		t.Fatalf("%d kept; 16 %v 32 %v 48 %v 64 %v", b.Snapshots(), b.HasSnapshot(key(16)), b.HasSnapshot(key(32)), b.HasSnapshot(key(48)),
			b.HasSnapshot(key(64)))
	}
	k := key(64)
	resumed := step(backend.SeqInput{Tokens: toks[64:70], Pos: 64, Blocks: blocks, Logits: true, Seq: 2, Restore: &k})
	for i := range last {
		if d := math.Abs(float64(last[i] - resumed[i])); d > 1e-5 {
			t.Fatalf("logit %d: %g continued, %g resumed", i, last[i], resumed[i])
		}
	}
}

// TestDeltaUpdateKernelsAgree: the AVX-512 delta rule gives the AVX2
// kernel's state and outputs bit for bit (heads of 16 to 256), and both
// stay within float rounding of the Go loop.
func TestDeltaUpdateKernelsAgree(t *testing.T) {
	if !haveSIMD || !haveAVX512 {
		t.Skip("needs AVX2 and AVX-512")
	}
	k512, err := chooseKernels("avx512")
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := chooseKernels("avx2")
	kgo, _ := chooseKernels("go")
	rng := rand.New(rand.NewPCG(7, 11))
	vec := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = (rng.Float32()*2 - 1) * scale
		}
		return v
	}
	for _, S := range []int{16, 32, 64, 128, 256} {
		M, k, q, d := vec(S*S, 1), vec(S, 0.3), vec(S, 0.3), vec(S, 2)
		next := vec(S*S, 1)
		run := func(kn *kernels) ([]float32, []float32) {
			m, o := slices.Clone(M), make([]float32, S)
			for range 3 { // a few tokens, each on the state the last left
				kn.deltaUpdate(m, S, k, q, 0.93, d, o, next)
			}
			return m, o
		}
		m512, o512 := run(k512)
		m2, o2 := run(k2)
		mgo, ogo := run(kgo)
		for i := range m2 {
			if math.Float32bits(m512[i]) != math.Float32bits(m2[i]) {
				t.Fatalf("S=%d: state[%d] %v (AVX-512) against %v (AVX2)", S, i, m512[i], m2[i])
			}
			if math.Abs(float64(m2[i]-mgo[i])) > 1e-5*(1+math.Abs(float64(mgo[i]))) {
				t.Fatalf("S=%d: state[%d] %v (AVX2) against %v (Go)", S, i, m2[i], mgo[i])
			}
		}
		for j := range o2 {
			if math.Float32bits(o512[j]) != math.Float32bits(o2[j]) {
				t.Fatalf("S=%d: o[%d] %v (AVX-512) against %v (AVX2)", S, j, o512[j], o2[j])
			}
			if math.Abs(float64(o2[j]-ogo[j])) > 1e-4*(1+math.Abs(float64(ogo[j]))) {
				t.Fatalf("S=%d: o[%d] %v (AVX2) against %v (Go)", S, j, o2[j], ogo[j])
			}
		}
	}
}

// BenchmarkDeltaUpdate: one head's decode-step update (S = 128) per
// kernel family, its state in L2 as a step's heads find theirs.
func BenchmarkDeltaUpdate(b *testing.B) {
	const S, heads = 128, 32
	M := make([]float32, heads*S*S)
	for i := range M {
		M[i] = float32(i%7) * 0.01
	}
	k, q, d, o := make([]float32, S), make([]float32, S), make([]float32, S), make([]float32, S)
	for _, name := range []string{"avx2", "avx512"} {
		kn, err := chooseKernels(name)
		if err != nil || !kn.simd {
			continue
		}
		b.Run(name, func(b *testing.B) {
			for i := range b.N {
				h := i % heads
				// decay 1: repeated decays would leave denormal states, which
				// time microcode assists, not the kernel
				kn.deltaUpdate(M[h*S*S:(h+1)*S*S], S, k, q, 1, d, o, M[(h+1)%heads*S*S:])
			}
		})
	}
}
