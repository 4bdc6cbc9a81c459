package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func randMatrix(t *testing.T, rng *rand.Rand, typ DType, rows, cols int) *Matrix {
	t.Helper()
	m, err := NewMatrix(typ, rows, cols, randomMatrix(rng, typ, rows, cols, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// withSIMD runs f with the assembly kernels on or off.
func withSIMD(on bool, f func()) {
	saved := useSIMD
	useSIMD = on
	defer func() { useSIMD = saved }()
	f()
}

func relErr(got, want float32) float64 {
	return math.Abs(float64(got)-float64(want)) / math.Max(1, math.Abs(float64(want)))
}

// TestSIMDMatchesPureGo checks every assembly kernel against the pure-Go path
// on random shapes, odd sizes and tails included. Tolerances are relative:
// F32 and F16 differ only in summation order (1e-5); Q8_0 sums integers
// exactly and differs only in how block results are added (1e-5).
func TestSIMDMatchesPureGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2/FMA/F16C on this CPU: only the pure-Go kernels run")
	}
	families := []floatKernels{avx2Float}
	if haveAVX512 {
		families = append(families, avx512Float)
	}
	saved := fk
	defer func() { fk = saved }()
	for _, fam := range families {
		fk = fam
		t.Run(fam.name, testSIMDFamily)
	}
}

func testSIMDFamily(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []DType{F32, F16, Q8_0} {
		for range 40 {
			cols := 1 + rng.IntN(300)
			if typ == Q8_0 {
				cols = Q8Block * (1 + rng.IntN(12))
			}
			rows, n := 1+rng.IntN(40), 1+rng.IntN(11)
			w := randMatrix(t, rng, typ, rows, cols)
			x := randVec(rng, n*cols)
			var xq []byte
			if typ == Q8_0 {
				xq = make([]byte, n*actRowBytes(cols))
				for i := range n {
					quantizeAct(x[i*cols:(i+1)*cols], xq[i*actRowBytes(cols):])
				}
			}
			want, got := make([]float32, n*rows), make([]float32, n*rows)
			matmulRows(want, x, xq, n, w, 0, rows)
			matmulRowsFast(got, x, xq, n, w, 0, rows)
			for i := range want {
				if e := relErr(got[i], want[i]); e > 1e-5 {
					t.Fatalf("%s %dx%d, %d tokens: element %d = %v, want %v", typ, rows, cols, n, i, got[i], want[i])
				}
			}
			// A token's row is bit-identical alone and in the batch.
			alone := make([]float32, rows)
			last := n - 1
			var xqLast []byte
			if xq != nil {
				xqLast = xq[last*actRowBytes(cols):]
			}
			matmulRowsFast(alone, x[last*cols:], xqLast, 1, w, 0, rows)
			for r := range rows {
				if alone[r] != got[last*rows+r] {
					t.Fatalf("%s %dx%d: token alone %v, in a batch of %d %v", typ, rows, cols, alone[r], n, got[last*rows+r])
				}
			}
		}
	}
	for range 50 {
		n := 1 + rng.IntN(200)
		a, b := randVec(rng, n), randVec(rng, n)
		var want, got float32
		withSIMD(false, func() { want = vdot(a, b) })
		withSIMD(true, func() { got = vdot(a, b) })
		if relErr(got, want) > 1e-5 {
			t.Fatalf("dot n=%d: %v, want %v", n, got, want)
		}
		y1, y2 := randVec(rng, n), make([]float32, n)
		copy(y2, y1)
		withSIMD(false, func() { vaxpy(0.37, a, y1) })
		withSIMD(true, func() { vaxpy(0.37, a, y2) })
		for i := range y1 {
			if relErr(y2[i], y1[i]) > 1e-6 {
				t.Fatalf("axpy n=%d [%d]: %v, want %v", n, i, y2[i], y1[i])
			}
		}
	}
}

// TestGoldensPureGo runs the goldens with the assembly kernels off, so that
// the pure-Go path stays tested on every CI run.
func TestGoldensPureGo(t *testing.T) {
	withSIMD(false, func() { TestGoldenGenerations(t) })
}
