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

// TestRows8MatchGo: the AVX2 row kernels (Q4_K, Q5_K, Q6_K, IQ4_XS; its
// AVX-VNNI one too), on rows packed eight to a group, give their Go loops' bits
// (dotQ4KRowGo, dotQ5KRowGo, dotQ6KGo, dotIQ4XSGo), on
// random bytes (every nibble, high bit, scale and min) and on quantized
// rows; over groups split between shares, rows past the last group, one
// to three tokens after groups of four (one or two after threes for
// IQ4_XS's sixteen-row kernel on AVX-VNNI), and more tokens than a pass takes; and
// stay within the activations' rounding of the float path.
func TestRows8MatchGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	kn, _ := chooseKernels("avx2")
	halves := map[quant.DType][]int{quant.Q4_K: {0, 2}, quant.Q5_K: {0, 2}, quant.Q6_K: {208}, quant.IQ4_XS: {0}}
	shapes := []struct{ rows, n, mid, cols int }{{8, 1, 8, 256}, {40, 7, 19, 512}, {35, 3, 13, 768}, {24, 70, 11, 256}, {16, 5, 16, 1024}, {16, 2, 8, 256 * 67}, {48, 65, 8, 512}, {32, 17, 32, 768}, {16, 16, 16, 256}}
	for f, ff := range rows8Formats {
		kn := kn
		if ff.avxvnni {
			if kn, _ = chooseKernels("avxvnni"); kn == nil {
				t.Logf("no AVX-VNNI: %s's kernel untested", ff.t)
				continue
			}
		}
		for _, sh := range shapes {
			for _, random := range []bool{true, false} {
				rows, n, cols := sh.rows, sh.n, sh.cols
				wb := synth.RandomMatrix(rng, ff.t, rows, cols, 0.5)
				if random {
					scrambleBlocks(rng, wb, ff.t, halves[ff.t])
				}
				w, err := model.NewMatrix(ff.t, rows, cols, wb)
				if err != nil {
					t.Fatal(err)
				}
				p := packed8(wb, w, ff.pack)
				x := randVec(rng, n*cols)
				var a acts
				a.need(x, n, w, rows8Acts(f))
				got := make([]float32, n*rows)
				scratch := make([]float32, scratchLen(cols))
				kn.matmulRows8(got, &a, n, w, p, 0, sh.mid, scratch, f)
				kn.matmulRows8(got, &a, n, w, p, sh.mid, rows, scratch, f)
				matchRowTail(t, got, wb, w, &a, x, fmt.Sprintf("random %v", random), a.q8k.d, 256)
			}
		}
	}
}

// packed8 is w's rows (wb) packed eight to a group by pack, as repack
// leaves them.
func packed8(wb []byte, w *model.Matrix, pack func(dst, src []byte, rb, g int)) []byte {
	p := make([]byte, len(wb))
	packGroups(8, w.Type, pack)(p, w)
	return p
}

// BenchmarkRows8 reports one thread's GMAC/s on a K-quant matrix of an
// FFN's shape: the AVX2 row kernel on its packed copy, the lane kernels it
// replaces, and the float path:
// go test -run X -bench Rows8 ./backend/cpu
func BenchmarkRows8(b *testing.B) {
	if !haveSIMD {
		b.Skip("no AVX2")
	}
	kn, _ := chooseKernels("avx2")
	const rows, cols = 1024, 4096
	rng := rand.New(rand.NewPCG(1, 2))
	for f, ff := range rows8Formats {
		kn := kn
		if ff.avxvnni {
			if kn, _ = chooseKernels("avxvnni"); kn == nil {
				continue
			}
		}
		wb := synth.RandomMatrix(rng, ff.t, rows, cols, 0.5)
		w, _ := model.NewMatrix(ff.t, rows, cols, wb)
		p := packed8(wb, w, ff.pack)
		for _, n := range []int{1, 2, 4, 8, 32, 64, 128} {
			x := randVec(rng, n*cols)
			var a acts
			a.need(x, n, w, rows8Acts(f))
			out := make([]float32, n*rows)
			scratch := make([]float32, scratchLen(cols))
			for _, form := range []string{"rows8", "lanes", "float"} {
				b.Run(fmt.Sprintf("%s/%s/n%d", ff.t, form, n), func(b *testing.B) {
					for b.Loop() {
						switch form {
						case "rows8":
							kn.matmulRows8(out, &a, n, w, p, 0, rows, scratch, f)
						case "lanes":
							kn.matmulInt8(out, &a, n, w, 0, rows, scratch)
						default:
							kn.matmulRange(out, x, nil, n, w, 0, rows, scratch)
						}
					}
					b.ReportMetric(float64(n*rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}

// TestHalvesMatchGo: Q4_0's and Q8_0's AVX2 and AVX-VNNI row kernels, on
// the VNNI kernels' packed groups of sixteen rows taken in halves (or
// whole, q40Rows16AVX2, q80Rows16AVX2 and their AVX-VNNI forms, for passes
// of one to three tokens), give rows32Go's bits, on random bytes,
// quantized rows and extreme ones (Q8_0's 16-bit sums at their bound),
// over halves split between shares, rows past the last group, one to three
// tokens after groups of four and more tokens than a pass takes.
func TestHalvesMatchGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	kn, _ := chooseKernels("avx2")
	type halfCase struct {
		t     quant.DType
		pack  func(dst, src []byte, rb, g int)
		kern  halfKernel
		group groupKernel
	}
	cases := []halfCase{{quant.Q4_0, packQ40, q40Rows8AVX2, nil}, {quant.Q4_0, packQ40, q40Rows8AVX2, q40Rows16AVX2}, {quant.Q8_0, packQ80S, q80Rows8AVX2, nil}, {quant.Q8_0, packQ80S, q80Rows8AVX2, q80Rows16AVX2}}
	if haveAVXVNNI {
		cases = append(cases, halfCase{quant.Q4_0, packQ40, q40Rows8AVXVNNI, nil}, halfCase{quant.Q4_0, packQ40, q40Rows8AVXVNNI, q40Rows16AVXVNNI}, halfCase{quant.Q8_0, packQ80, q80Rows8AVXVNNI, nil}, halfCase{quant.Q8_0, packQ80, q80Rows8AVXVNNI, q80Rows16AVXVNNI})
	} else {
		t.Log("no AVX-VNNI: q80Rows8AVXVNNI untested")
	}
	shapes := []struct{ rows, n, mid, cols int }{{16, 1, 8, 32}, {40, 7, 19, 256}, {35, 3, 13, 96}, {48, 70, 21, 64}, {32, 5, 4, 1024}, {48, 2, 16, 64}, {64, 67, 32, 256}}
	for _, c := range cases {
		for _, sh := range shapes {
			for _, form := range []string{"random", "quantized", "extreme"} {
				rows, n, cols := sh.rows, sh.n, sh.cols
				wb := synth.RandomMatrix(rng, c.t, rows, cols, 0.5)
				x := randVec(rng, n*cols)
				switch form {
				case "random":
					scrambleBlocks(rng, wb, c.t, []int{0})
				case "extreme":
					extremeRows(rng, wb, c.t, x)
				}
				w, err := model.NewMatrix(c.t, rows, cols, wb)
				if err != nil {
					t.Fatal(err)
				}
				p := make([]byte, len(wb))
				packGroups(16, c.t, c.pack)(p, w)
				var a acts
				a.need(x, n, w, actQ8_0)
				got := make([]float32, n*rows)
				scratch := make([]float32, scratchLen(cols))
				kn.matmulHalves(got, &a, n, w, p, 0, sh.mid, scratch, c.kern, c.group)
				kn.matmulHalves(got, &a, n, w, p, sh.mid, rows, scratch, c.kern, c.group)
				matchRowTail(t, got, wb, w, &a, x, form, a.q8.d, 32)
			}
		}
	}
}

// extremeRows sets every value of wb's blocks (Q4_0, Q8_0) to its largest
// or its smallest and x to 1 or -1 (127 or -127 quantized), a block each,
// so the kernels' 16-bit sums reach their bounds.
func extremeRows(rng *rand.Rand, wb []byte, t quant.DType, x []float32) {
	bb, head := 34, 2
	hi, lo := byte(0x7f), byte(0x80)
	if t == quant.Q4_0 {
		bb, hi, lo = 18, 0xff, 0x00
	}
	for b := 0; b+bb <= len(wb); b += bb {
		v := hi
		if rng.IntN(2) == 0 {
			v = lo
		}
		for i := b + head; i < b+bb; i++ {
			wb[i] = v
		}
	}
	sign := float32(1)
	for i := range x {
		if i%32 == 0 && rng.IntN(2) == 0 {
			sign = -sign
		}
		x[i] = sign
	}
}

// rows8Acts is the activation form rows8Formats[f]'s kernel takes.
func rows8Acts(f int) actKind {
	if rows8Formats[f].split {
		return actQ8_KS
	}
	return actQ8_K
}

// matchRowTail fails t unless every result in got (tokens by w's rows,
// from w's bytes wb and a's activations of x) has rowTail's bits and
// stays within the activations' rounding (scales d, one per block values).
func matchRowTail(t *testing.T, got []float32, wb []byte, w *model.Matrix, a *acts, x []float32, what string, d []float32, block int) {
	t.Helper()
	rows, cols := w.Rows, w.Cols
	rb := w.Type.RowBytes(cols)
	row := make([]float32, cols)
	for i := range got {
		tok, r := i/rows, i%rows
		want := rowTail(wb[r*rb:(r+1)*rb], a, tok, w.Type, cols)
		if math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("%s %d rows, %d tokens, %d cols, %s: row %d token %d: kernel %v, Go %v", w.Type, rows, len(got)/rows, cols, what, r, tok, got[i], want)
		}
		w.Row(r, row)
		checkRounding(t, got[i], row, x[tok*cols:(tok+1)*cols], d[tok*cols/block:], block)
	}
}

// TestSplitNoTokens: an input of no tokens splits (or widens) to nothing
// (no panic).
func TestSplitNoTokens(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	var a acts
	wk, _ := model.NewMatrix(quant.IQ4_XS, 16, 256, make([]byte, 16*136))
	a.need(nil, 0, wk, actQ8_KS)
	if len(a.q8k.split) != 0 || len(a.q8k.wide) != 0 {
		t.Fatalf("widened %d bytes for no tokens", len(a.q8k.wide))
	}
}
