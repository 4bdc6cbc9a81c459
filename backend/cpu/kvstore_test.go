package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/quant"
)

// TestQuantKVKernelsMatchGo: a block-format store's scores and V sums
// through the SIMD kernels (the Q8_0 accumulate, the VNNI row kernels, the
// AVX2 row kernels) give the bits its Go loops give, rows in whole and
// partial sixteens, heads of one to four blocks.
func TestQuantKVKernelsMatchGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this CPU")
	}
	simd, _ := chooseKernels("")
	rng := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []quant.DType{quant.Q8_0, quant.Q4_0, quant.Q5_0, quant.IQ4_NL} {
		for _, hd := range []int{32, 64, 96, 128} {
			for _, n := range []int{1, 5, 16, 17, 31, 32} {
				rows := 32
				kv := heapKV(typ, rows*hd, rows, simd)
				for r := range n {
					kv.put(r*hd, randVec(rng, hd))
				}
				q := randVec(rng, hd)
				var qa q8Acts
				qa.quantize(q, 1, hd)
				got := make([]float32, n)
				kv.dots(q, &qa, 0, hd, n, got)
				p := randVec(rng, n)
				acc := randVec(rng, hd)
				want := append([]float32(nil), acc...)
				kv.accum(p, 0, hd, acc, make([]float32, rows*hd))
				deq := make([]float32, n*hd)
				quant.Lookup(typ).Dequantize(kv.bytes(0, n*hd), deq)
				for j := range n {
					g := rows32Go(kv.bytes(j*hd, hd), qa.qs, qa.d, hd/32, kvBlock32(typ))
					if simd.vnni && got[j] != g || !simd.vnni && relErr(got[j], g) > 1e-5 {
						t.Fatalf("%v hd %d n %d row %d: score %v, Go %v", typ, hd, n, j, got[j], g)
					}
					for i := range hd {
						want[i] = float32(math.FMA(float64(p[j]), float64(deq[j*hd+i]), float64(want[i])))
					}
				}
				for i := range want {
					if acc[i] != want[i] {
						t.Fatalf("%v hd %d n %d: V sum [%d] %v, want %v", typ, hd, n, i, acc[i], want[i])
					}
				}
			}
		}
	}
}

// TestRoundEven: the float32 rounding trick equals round-half-even on the
// quantizers' range, ties included.
func TestRoundEven(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 1 << 20 {
		y := (rng.Float32() - 0.5) * 260
		if i%4 == 0 {
			y = float32(rng.IntN(256)-128) + 0.5 // a tie
		}
		if got, want := roundEven(y), int32(math.RoundToEven(float64(y))); got != want {
			t.Fatalf("roundEven(%v) = %d, want %d", y, got, want)
		}
	}
}

// TestRotateMatchesGo: the SIMD transform gives the Go loops' bits, and
// is its own inverse to rounding.
func TestRotateMatchesGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this CPU")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{64, 128, 256} {
		x := randVec(rng, 3*n)
		a, b := append([]float32(nil), x...), append([]float32(nil), x...)
		rotate(a, n, false)
		rotate(b, n, true)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("n %d [%d]: simd %v, go %v", n, i, b[i], a[i])
			}
		}
		rotate(b, n, true)
		for i := range x {
			if math.Abs(float64(b[i]-x[i])) > 1e-5 {
				t.Fatalf("n %d [%d]: twice %v, was %v", n, i, b[i], x[i])
			}
		}
	}
}
