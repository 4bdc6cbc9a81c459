package cpu

import (
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestQuantizedForwardMatchesReference checks the F16 and Q8_0 paths against
// the dense reference, which dequantizes rows on its own.
func TestQuantizedForwardMatchesReference(t *testing.T) {
	for _, dt := range []quant.DType{quant.F16, quant.Q8_0} {
		path, _ := synth.WriteFile(t, synth.Tiny(dt, 64, 3))
		m, err := model.Load(path, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(m, backend.Options{NumBlocks: 8, BlockSize: 4})
		ref := &denseRef{m: m}
		toks := []int{1, 300 - 1, 17, 42, 280, 5, 99}
		var want []float32
		for i, tok := range toks {
			want = ref.step(tok, i)
		}
		got, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{{Tokens: toks, Blocks: []int{5, 2}, Logits: true}}})
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(got[0], want); d > 1e-5 {
			t.Fatalf("%s: logits differ by %g", dt, d)
		}
		b.Close()
		m.Close()
	}
}

// TestForwardDoesNotAllocate: once its buffers have grown, a step allocates
// nothing, for every weight type and for small (fused) and large batches.
// Garbage here is paid on every step as GC work.
func TestForwardDoesNotAllocate(t *testing.T) {
	// The K-quant and IQ4 models have 64-wide heads (four-query attention);
	// under int8, every format's int8 kernels run.
	cases := []struct {
		dt       quant.DType
		quantDot string
		moe      bool // a mixture of experts: under auto the per-expert path, else the fused one
	}{{quant.F32, "", false}, {quant.F16, "", false}, {quant.Q8_0, "", false}, {quant.Q4_K, "", false},
		{quant.Q4_0, "int8", false}, {quant.Q4_K, "int8", false}, {quant.IQ4_XS, "int8", false},
		{quant.Q3_K, "int8", false}, {quant.Q5_0, "int8", false}, {quant.Q4_1, "auto", false},
		{quant.F32, "", true}, {quant.Q4_K, "int8", true}, {quant.Q8_0, "auto", true}}
	for _, c := range cases {
		dt := c.dt
		o := synth.Tiny(dt, 64, 3)
		if c.moe {
			o = synth.TinyMoE(dt, 64, 3)
		}
		path, _ := synth.WriteFile(t, o)
		m, err := model.Load(path, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kv := quant.F32
		if quant.Lookup(dt).BlockElems > 32 {
			kv = quant.F16
		}
		b, err := New(m, backend.Options{NumBlocks: 64, BlockSize: 4, Threads: 2, KV: backend.SameKV(kv), QuantDot: c.quantDot})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 3, 12} { // decodes beside one prefill chunk
			batch := &backend.Batch{Seqs: []backend.SeqInput{{Tokens: []int{1, 7, 9, 11, 13}, Blocks: []int{0, 1}, Logits: true}}}
			for i := range n {
				batch.Seqs = append(batch.Seqs, backend.SeqInput{Tokens: []int{i + 2}, Pos: 6, Blocks: []int{2 + 2*i, 3 + 2*i}, Logits: true})
			}
			if _, err := b.Forward(batch); err != nil {
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(5, func() { b.Forward(batch) }); a != 0 {
				t.Errorf("%s %q, %d decodes: %v allocations per step", dt, c.quantDot, n, a)
			}
		}
		b.Close()
		m.Close()
	}
}
