//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestAMXMatchesVNNI: on a machine with AMX-INT8 its Q8_0 kernel gives
// the VNNI kernel's bits (and so the Go loops': TestPackedMatchesGo runs
// it through matmulInt8) for every token count a call takes, on quantized rows and on random bytes (any scale,
// the extreme quants -128 and 127).
func TestAMXMatchesVNNI(t *testing.T) {
	if !haveAMX {
		t.Skip("no AMX-INT8 (Sapphire Rapids or later, Linux 5.16 or later)")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	rows := 48
	for n := 1; n <= rowsTokens; n++ {
		// An odd count of blocks ends the kernels' loops on the other set
		// of tiles; one block is only the first's products.
		cols := 320 - 32*(n%2)
		if n%5 == 2 {
			cols = 32
		}
		rb, nb := quant.Q8_0.RowBytes(cols), cols/32
		wb := synth.RandomMatrix(rng, quant.Q8_0, rows, cols, 0.5)
		if n%2 == 0 {
			for i := range wb {
				wb[i] = byte(rng.Uint32())
			}
			for b := range rows * nb {
				h := quant.F32ToF16(rng.Float32()*0.02 - 0.01)
				wb[b*34], wb[b*34+1] = byte(h), byte(h>>8)
			}
		}
		w, err := model.NewMatrix(quant.Q8_0, rows, cols, wb)
		if err != nil {
			t.Fatal(err)
		}
		packed := make([]byte, len(wb))
		for g := range rows / 16 {
			packQ80(packed[g*16*rb:(g+1)*16*rb], wb, rb, g)
		}
		x := randVec(rng, n*cols)
		if n == 3 {
			for i := range x { // every activation at the scale's end: -127 or 127
				x[i] = float32(1 - 2*(i%2))
			}
		}
		var a acts
		a.need(x, n, w, actQ8_0)
		acc := make([]float32, 64*rowsTokens)
		want := make([]float32, n*rows)
		for g := 0; g < rows; g += 16 {
			q80Packed16VNNI(&packed[g*rb], rb, &a.q8.qs[0], &a.q8.d[0], &a.q8.nsum[0], cols, nb, nb, n, &acc[0], &want[g], rows)
		}
		for _, once := range []bool{false, true} { // 16-token tiles, and pairs (q80AMX32)
			got := make([]float32, n*rows)
			for g := 0; g < rows; g += 16 {
				amxKernel(quant.Q8_0, once)(&packed[g*rb], rb, &a.q8.qs[0], &a.q8.d[0], &a.q8.nsum[0], cols, nb, nb, n, &acc[0], &got[g], rows)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%d tokens, once %v: token %d row %d: AMX %v, VNNI %v", n, once, i/rows, i%rows, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkAMXvsVNNI: the Q8_0 kernels on 2048 rows of 2560 columns, one
// thread, at each token count: microseconds a token.
func BenchmarkAMXvsVNNI(b *testing.B) {
	if !haveAMX {
		b.Skip("no AMX-INT8")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows, cols := 2048, 2560
	wb := synth.RandomMatrix(rng, quant.Q8_0, rows, cols, 0.5)
	w, _ := model.NewMatrix(quant.Q8_0, rows, cols, wb)
	rb, nb := quant.Q8_0.RowBytes(cols), cols/32
	packed := make([]byte, len(wb))
	for g := range rows / 16 {
		packQ80(packed[g*16*rb:(g+1)*16*rb], wb, rb, g)
	}
	for _, n := range []int{1, 4, 5, 6, 7, 8, 16, 32, 64} {
		x := randVec(rng, n*cols)
		var a acts
		a.need(x, n, w, actQ8_0)
		acc, out := make([]float32, 64*rowsTokens), make([]float32, n*rows)
		for _, k := range []struct {
			name string
			f    rows16Kernel
		}{{"vnni", q80Packed16VNNI}, {"amx", q80PackedAMX}, {"amx-once", q80PackedAMXOnce}} {
			b.Run(fmt.Sprintf("%s/%d", k.name, n), func(b *testing.B) {
				for b.Loop() {
					for g := 0; g < rows; g += 16 {
						k.f(&packed[g*rb], rb, &a.q8.qs[0], &a.q8.d[0], &a.q8.nsum[0], cols, nb, nb, n, &acc[0], &out[g], rows)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "us/token")
			})
		}
	}
}

// TestAMXQ4KMatchesGo: Q4_K, Q5_K and Q6_K on AMX give dotKRowGo's (dotQ6KGo's) bits, on quantized
// rows and on random bytes (every 6-bit scale and min, any d and dmin),
// for token counts that fill their tiles and ones whose last tile
// overlaps the one before, in shares that split groups; matmulInt8 takes
// it from amxTokens.
func TestAMXQ4KMatchesGo(t *testing.T) {
	if !haveAMX {
		t.Skip("no AMX-INT8 (Sapphire Rapids or later, Linux 5.16 or later)")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	simd, _ := chooseKernels("")
	simd.int8 = true
	if !simd.amx {
		t.Fatal("AMX kernels not chosen")
	}
	for _, dt := range []quant.DType{quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		for _, sh := range []struct{ rows, n, cols int }{{16, 1, 256}, {40, 17, 512}, {35, 33, 768}, {48, 16, 256},
			{64, 66, 256}, {16, 7, 256}, {40, amxTokens, 512}, {19, 70, 256}} {
			for _, random := range []bool{false, true} {
				rows, n, cols := sh.rows, sh.n, sh.cols
				wb := synth.RandomMatrix(rng, dt, rows, cols, 0.5)
				if random {
					halves := []int{0, 2} // d and dmin
					if dt == quant.Q6_K {
						halves = []int{208}
					}
					scrambleBlocks(rng, wb, dt, halves)
				}
				w, err := model.NewMatrix(dt, rows, cols, wb)
				if err != nil {
					t.Fatal(err)
				}
				x := randVec(rng, n*cols)
				var a acts
				a.need(x, n, w, actQ8_K)
				got := make([]float32, n*rows)
				mid, whole := min(rows, 19), rows&^15
				if n >= amxTokens {
					scratch := make([]float32, scratchLen(cols))
					simd.matmulInt8(got, &a, n, w, 0, mid, scratch)
					simd.matmulInt8(got, &a, n, w, mid, rows, scratch)
				} else {
					simd.matmulKAMX(got, &a, n, w, 0, mid, whole)
					simd.matmulKAMX(got, &a, n, w, mid, rows, whole)
				}
				rb := dt.RowBytes(cols)
				for i := range got {
					tok, r := i/rows, i%rows
					if r >= whole && n < amxTokens {
						continue // matmulRows16's Go loop, not called here
					}
					want := rowTail(w.Data[r*rb:(r+1)*rb], &a, tok, dt, cols)
					if math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Fatalf("%s, %d rows, %d tokens, %d cols, random %v: row %d token %d: AMX %v, Go %v", dt, rows, n, cols, random, r, tok, got[i], want)
					}
				}
			}
		}
	}
}

// BenchmarkAMXQ4K: Q4_K and Q6_K matmuls of 2048 x 2048 on AMX (expansion
// included) and on the VNNI kernel, one thread: microseconds a token.
func BenchmarkAMXQ4K(b *testing.B) {
	if !haveAMX {
		b.Skip("no AMX-INT8")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rows, cols := 2048, 2048
	for _, dt := range []quant.DType{quant.Q4_K, quant.Q6_K} {
		w, _ := model.NewMatrix(dt, rows, cols, synth.RandomMatrix(rng, dt, rows, cols, 0.5))
		for _, n := range []int{16, 64, 256} {
			x := randVec(rng, n*cols)
			var a acts
			a.need(x, n, w, actQ8_K)
			out, scratch := make([]float32, n*rows), make([]float32, scratchLen(cols))
			for _, fam := range []string{"avx512", "amx"} {
				kn, _ := chooseKernels(fam)
				kn.int8 = true
				b.Run(fmt.Sprintf("%s/%s/%d", dt, fam, n), func(b *testing.B) {
					for b.Loop() {
						if kn.amx { // at any count, not only from amxTokens
							kn.matmulKAMX(out, &a, n, w, 0, rows, rows)
						} else {
							kn.matmulInt8(out, &a, n, w, 0, rows, scratch)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "us/token")
				})
			}
		}
	}
}

// TestAMXForwardInvisible: through whole forwards, a prompt of 100 tokens
// (three passes of 32 on AMX, the last 4 on VNNI) gives the same logits with the
// AMX kernels as without (kernel family avx512), alone and beside other
// sequences, on every format they take, so batching stays invisible; and
// so does one of 24 (Q8_0's groups read once: two tiles of 12, q80AMX32;
// beside the other sequence's 40, two passes of 32).
func TestAMXForwardInvisible(t *testing.T) {
	if !haveAMX {
		t.Skip("no AMX-INT8 (Sapphire Rapids or later, Linux 5.16 or later)")
	}
	rng := rand.New(rand.NewPCG(51, 52))
	prompt := make([]int, 100)
	for i := range prompt {
		prompt[i] = 1 + rng.IntN(299)
	}
	for _, dt := range []quant.DType{quant.Q8_0, quant.Q4_0, quant.IQ4_NL, quant.Q4_K, quant.Q6_K} {
		path, _ := synth.WriteFile(t, synth.Options{Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 300,
			Context: 256, DType: dt, Seed: 7})
		m, err := model.Load(path, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		run := func(kernels string, mixed bool, p []int) []float32 {
			b, err := New(m, backend.Options{NumBlocks: 64, BlockSize: 16, KV: backend.SameKV(quant.F16), QuantDot: "int8", Kernels: kernels})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			seqs := []backend.SeqInput{{Tokens: p, Blocks: []int{0, 1, 2, 3, 4, 5, 6}, Logits: true}}
			if mixed {
				seqs = append(seqs, backend.SeqInput{Tokens: prompt[:40], Blocks: []int{10, 11, 12}, Logits: true})
			}
			logits, err := b.Forward(&backend.Batch{Seqs: seqs})
			if err != nil {
				t.Fatal(err)
			}
			return logits[0]
		}
		for _, p := range [][]int{prompt, prompt[:24]} {
			want := run("avx512", false, p)
			for _, c := range []struct {
				kernels string
				mixed   bool
			}{{"amx", false}, {"amx", true}, {"avx512", true}} {
				got := run(c.kernels, c.mixed, p)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s, %d tokens, kernels %s, mixed %v: logit %d: %v, want %v", dt, len(p), c.kernels, c.mixed, i, got[i], want[i])
					}
				}
			}
		}
		_ = m.Close()
	}
}
