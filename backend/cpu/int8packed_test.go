package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestPackedMatchesGo: the packed kernels (Q8_0, MXFP4, Q4_0, IQ4_NL, and
// the AMX kernels for prompt passes) give their Go loops' sums bit for
// bit, on random bytes (every quant, any scale) and quantized rows, a
// token and passes of many, through matmulInt8 on a model's packed matrix
// (the rows past the last group from the file's layout).
func TestPackedMatchesGo(t *testing.T) {
	if !haveVNNI {
		t.Skip("no AVX512-VNNI")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	simd, _ := chooseKernels("")
	simd.int8 = true
	for _, f := range packedFormats {
		dt := f.t
		// {48, 70, 256}: a pass of 64 tokens (on AMX where the CPU has it:
		// Q8_0's kernel, Q4_0's and IQ4_NL's groups turned into Q8_0's) and
		// one of 6.
		for _, sh := range []struct{ rows, n, cols int }{{16, 1, 32}, {40, 7, 256}, {35, 1, 288}, {48, 70, 96}, {48, 70, 256}} {
			for _, random := range []bool{true, false} {
				rows, n, cols := sh.rows, sh.n, sh.cols
				wb := synth.RandomMatrix(rng, dt, rows, cols, 0.5)
				if random {
					scrambleBlocks(rng, wb, dt, []int{0})
				}
				w, err := model.NewMatrix(dt, rows, cols, wb)
				if err != nil {
					t.Fatal(err)
				}
				m := &model.Model{Embed: w, Output: w}
				if err := repack(m, simd); err != nil || w.Packed() == nil {
					t.Fatalf("repack: %v, packed %v", err, w.Packed() != nil)
				}
				x := randVec(rng, n*cols)
				var a acts
				a.need(x, n, w, actQ8_0)
				got := make([]float32, n*rows)
				scratch := make([]float32, scratchLen(cols))
				mid := min(rows, 19)
				simd.matmulInt8(got, &a, n, w, 0, mid, scratch)
				simd.matmulInt8(got, &a, n, w, mid, rows, scratch)
				rb := dt.RowBytes(cols)
				for i := range got {
					tok, r := i/rows, i%rows
					want := rowTail(w.Data[r*rb:(r+1)*rb], &a, tok, dt, cols)
					if math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Fatalf("%s %d rows, %d tokens, random %v: row %d token %d: packed %v, Go %v", dt, rows, n, random, r, tok, got[i], want)
					}
				}
				_ = m.Close()
			}
		}
	}
}

// TestRepackOnce: a backend on the int8 path with VNNI packs the model's
// Q8_0 matrices once, however many run it, but not the token embedding
// table unless it is the classifier, and the float path packs nothing; a
// sleep that releases the weights frees the copies, and waking repacks.
// (TestQ80PackedMatchesGo checks the sums; the int8 goldens run packed.)
func TestRepackOnce(t *testing.T) {
	if !haveVNNI {
		t.Skip("no AVX512-VNNI")
	}
	path, _ := synth.WriteFile(t, synth.Tiny(quant.Q8_0, 64, 5))
	load := func() *model.Model {
		m, err := model.Load(path, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	m := load()
	opts := backend.Options{NumBlocks: 8, BlockSize: 16, KV: backend.SameKV(quant.F16), QuantDot: "float"}
	if _, err := New(m, opts); err != nil || m.Layers[0].Wq.Packed() != nil {
		t.Fatalf("float path: %v, packed %v", err, m.Layers[0].Wq.Packed() != nil)
	}
	opts.QuantDot = "int8"
	b1, err := New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Layers[0].W1.Packed()
	if p == nil || m.Layers[0].W1.Rows < 16 {
		t.Fatal("ffn gate not packed")
	}
	if _, err := New(m, opts); err != nil || &m.Layers[0].W1.Packed()[0] != &p[0] {
		t.Fatalf("second backend: %v, packed again", err)
	}
	if m.Embed != m.Output && m.Embed.Packed() != nil {
		t.Error("untied embedding table packed")
	}
	// A sleep that drops the weights drops the copies; waking repacks.
	if err := b1.Release(true); err != nil || m.Layers[0].W1.Packed() != nil {
		t.Fatalf("release: %v, packed %v", err, m.Layers[0].W1.Packed() != nil)
	}
	if err := b1.Restore(); err != nil || m.Layers[0].W1.Packed() == nil {
		t.Fatalf("restore: %v, packed %v", err, m.Layers[0].W1.Packed() != nil)
	}
	b1.Close()
}

// BenchmarkPackedFormats: one token against each packed format's kernel
// and its gather kernel on the file's layout, 32768 rows of 4096 columns
// (past the caches), one thread: bytes a second.
func BenchmarkPackedFormats(b *testing.B) {
	if !haveVNNI {
		b.Skip("no AVX512-VNNI")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows, cols := 32768, 4096
	x := randVec(rng, cols)
	acc, out := make([]float32, 64), make([]float32, rows)
	for _, f := range packedFormats {
		wb := synth.RandomMatrix(rng, f.t, rows, cols, 0.5)
		w, _ := model.NewMatrix(f.t, rows, cols, wb)
		rb, nb := f.t.RowBytes(cols), cols/32
		packed := make([]byte, len(wb))
		for g := range rows / 16 {
			f.pack(packed[g*16*rb:(g+1)*16*rb], wb, rb, g)
		}
		var a acts
		a.need(x, 1, w, actQ8_0)
		for _, k := range []struct {
			name string
			kern rows16Kernel
			data []byte
		}{{"gather", rowKernel(f.t), wb}, {"packed", f.kern, packed}} {
			b.Run(f.t.String()+"/"+k.name, func(b *testing.B) {
				b.SetBytes(int64(len(wb)))
				for b.Loop() {
					for g := 0; g < rows; g += 16 {
						k.kern(&k.data[g*rb], rb, &a.q8.qs[0], &a.q8.d[0], &a.q8.nsum[0], cols, nb, nb, 1, &acc[0], &out[g], rows)
					}
				}
			})
		}
	}
}

// TestRepackRefusesAnotherLayout: plain AVX2 packs Q8_0 without the bias
// the VNNI families' kernels take, so a backend of such a family on a
// model an avx2 backend has packed is refused with an error, not run on
// copies it would misread; a second avx2 backend shares them.
func TestRepackRefusesAnotherLayout(t *testing.T) {
	if !haveAVXVNNI && !haveVNNI {
		t.Skip("no VNNI family beside avx2 on this CPU")
	}
	path, _ := synth.WriteFile(t, synth.Options{Dim: 64, Layers: 1, Heads: 2, KVHeads: 2, FFN: 128, Vocab: 300,
		Context: 64, DType: quant.Q8_0, Seed: 5})
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	open := func(fam string) error {
		b, err := New(m, backend.Options{NumBlocks: 4, BlockSize: 16, KV: backend.SameKV(quant.F16), QuantDot: "int8", Kernels: fam})
		if err == nil {
			b.Close()
		}
		return err
	}
	if err := open("avx2"); err != nil {
		t.Fatal(err)
	}
	if err := open("avx2"); err != nil {
		t.Fatalf("a second avx2 backend: %v", err)
	}
	other := "avxvnni"
	if !haveAVXVNNI {
		other = "avx512"
	}
	if err := open(other); err == nil {
		t.Fatalf("%s on avx2's Q8_0 copies: no error", other)
	}
}
