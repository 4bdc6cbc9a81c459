package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestQ4KRows8MatchGo: Q4_K's AVX2 row kernel, on rows packed eight to a
// group, gives dotQ4KRowGo's bits, on random bytes (every nibble, scale
// and min) and on quantized rows; over groups split between shares, rows
// past the last group, one to three tokens after groups of four, and more
// tokens than a pass takes; and stays within the activations' rounding of
// the float path.
func TestQ4KRows8MatchGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	kn, _ := chooseKernels("avx2")
	shapes := []struct{ rows, n, mid, cols int }{{8, 1, 8, 256}, {40, 7, 19, 512}, {35, 3, 13, 768}, {24, 70, 11, 256}, {16, 5, 16, 1024}}
	for _, sh := range shapes {
		for _, random := range []bool{true, false} {
			rows, n, cols := sh.rows, sh.n, sh.cols
			wb := synth.RandomMatrix(rng, quant.Q4_K, rows, cols, 0.5)
			if random {
				scrambleBlocks(rng, wb, quant.Q4_K, []int{0, 2})
			}
			w, err := model.NewMatrix(quant.Q4_K, rows, cols, wb)
			if err != nil {
				t.Fatal(err)
			}
			rb := w.Type.RowBytes(cols)
			p := make([]byte, len(wb))
			for g := range rows / 8 {
				packQ4K8(p[g*8*rb:], wb, rb, g)
			}
			copy(p[rows&^7*rb:], wb[rows&^7*rb:])
			x := randVec(rng, n*cols)
			var a acts
			a.need(x, n, w, actQ8_K)
			got := make([]float32, n*rows)
			scratch := make([]float32, scratchLen(cols))
			kn.matmulQ4KRows8(got, &a.q8k, n, w, p, 0, sh.mid, scratch)
			kn.matmulQ4KRows8(got, &a.q8k, n, w, p, sh.mid, rows, scratch)
			row := make([]float32, cols)
			for i := range got {
				tok, r := i/rows, i%rows
				want := rowTail(wb[r*rb:(r+1)*rb], &a, tok, quant.Q4_K, cols)
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("%d rows, %d tokens, %d cols, random %v: row %d token %d: kernel %v, Go %v", rows, n, cols, random, r, tok, got[i], want)
				}
				w.Row(r, row)
				checkRounding(t, got[i], row, x[tok*cols:(tok+1)*cols], a.q8k.d[tok*cols/256:], 256)
			}
		}
	}
}

// BenchmarkQ4KRows8 reports one thread's GMAC/s on a Q4_K matrix of an FFN's
// shape: the AVX2 row kernel on its packed copy, the lane kernels it
// replaces, and the float path:
// go test -run X -bench Q4KRows8 ./backend/cpu
func BenchmarkQ4KRows8(b *testing.B) {
	if !haveSIMD {
		b.Skip("no AVX2")
	}
	kn, _ := chooseKernels("avx2")
	const rows, cols = 1024, 4096
	rng := rand.New(rand.NewPCG(1, 2))
	wb := synth.RandomMatrix(rng, quant.Q4_K, rows, cols, 0.5)
	w, _ := model.NewMatrix(quant.Q4_K, rows, cols, wb)
	rb := w.Type.RowBytes(cols)
	p := make([]byte, len(wb))
	for g := range rows / 8 {
		packQ4K8(p[g*8*rb:], wb, rb, g)
	}
	for _, n := range []int{1, 2, 4, 8, 32, 64, 128} {
		x := randVec(rng, n*cols)
		var a acts
		a.need(x, n, w, actQ8_K)
		out := make([]float32, n*rows)
		scratch := make([]float32, scratchLen(cols))
		for _, form := range []string{"rows8", "lanes", "float"} {
			b.Run(fmt.Sprintf("%s/n%d", form, n), func(b *testing.B) {
				for b.Loop() {
					switch form {
					case "rows8":
						kn.matmulQ4KRows8(out, &a.q8k, n, w, p, 0, rows, scratch)
					case "lanes":
						kn.matmulKLanes(out, &a.q8k, n, w, 0, rows, scratch)
					default:
						kn.matmulRange(out, x, nil, n, w, 0, rows, scratch)
					}
				}
				b.ReportMetric(float64(n*rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}
