package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/quant"
)

// TestGeluSIMDMatchesGo: the AVX2 GELU gives gelu's bits times y (or
// alone) on every half float, on values between them (where rounding to
// half decides the entry, ties included), around the ±10 cut-offs and on
// infinities; lengths that leave a tail for the Go loop.
func TestGeluSIMDMatchesGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(6, 7))
	var x []float32
	for i := range 1 << 16 {
		f := quant.F16ToF32(uint16(i))
		if math.IsNaN(float64(f)) {
			continue
		}
		next := math.Nextafter32(f, float32(math.Inf(1)))
		x = append(x, f, next, math.Nextafter32(f, float32(math.Inf(-1))))
		if i+1 < 1<<16 { // the tie between two halves
			x = append(x, float32((float64(f)+float64(quant.F16ToF32(uint16(i+1))))/2))
		}
	}
	for _, v := range []float32{-10, 10, math.Nextafter32(-10, 0), math.Nextafter32(10, 0), -10.5, 10.5, 1e30, -1e30} {
		x = append(x, v, float32(math.Inf(1)), float32(math.Inf(-1)))
	}
	for range 10000 {
		x = append(x, float32(rng.NormFloat64()*4))
	}
	x = x[:len(x)-3] // not a multiple of 8
	y := make([]float32, len(x))
	for i := range y {
		y[i] = float32(rng.NormFloat64())
	}
	for _, withY := range []bool{false, true} {
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		yy := y
		if !withY {
			yy = nil
		}
		geluMul(true, got, yy)
		for i, v := range want {
			if want[i] = gelu(v); withY {
				want[i] *= y[i]
			}
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("y %v: gelu(%g) = %g, Go %g", withY, x[i], got[i], want[i])
			}
		}
	}
}
