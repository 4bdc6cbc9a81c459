package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/engine/model"
	"github.com/batchd/batchd/engine/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestQ8Quantize: activation blocks quantize as ggml's quantize_row_q8_0
// (AVX2 build): fp16 scale amax/127, values rounded half to even, and a
// zero block stays zero.
func TestQ8Quantize(t *testing.T) {
	x := make([]float32, 64)
	for i := range 32 {
		x[i] = float32(i-16) / 4 // amax 4: id 127/4 = 31.75
	}
	var a q8Acts
	a.quantize(x, 1, 64)
	if a.d[0] != quant.F16ToF32(quant.F32ToF16(4.0/127)) || a.d[1] != 0 {
		t.Fatalf("scales %v", a.d)
	}
	for i := range 32 {
		want := int8(math.RoundToEven(float64(x[i] * (127 / float32(4)))))
		if a.qs[i] != want || a.qs[32+i] != 0 {
			t.Fatalf("value %d: %d, want %d", i, a.qs[i], want)
		}
	}
	if a.qs[0] != -127 || a.qs[2] != -111 { // -4*31.75; -3.5*31.75 = -111.125
		t.Fatalf("qs %v", a.qs[:4])
	}
}

// TestInt8KernelsMatchGo: the VNNI Q4_0 kernels (one token and four) give
// exactly the Go loops' sums, and those differ from the float path's by no
// more than the activations' rounding allows (half a step per element).
func TestInt8KernelsMatchGo(t *testing.T) {
	if !haveVNNI {
		t.Skip("no AVX512-VNNI")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, cols, n = 8, 256, 7
	w, err := model.NewMatrix(quant.Q4_0, rows, cols, synth.RandomMatrix(rng, quant.Q4_0, rows, cols, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	var a q8Acts
	a.quantize(x, n, cols)
	simd, _ := chooseKernels("")
	gok, _ := chooseKernels("go")
	simd.int8, gok.int8 = true, true
	got, want := make([]float32, n*rows), make([]float32, n*rows)
	simd.matmulInt8(got, &a, n, w, 0, rows, make([]float32, resLen))
	gok.matmulInt8(want, &a, n, w, 0, rows, make([]float32, resLen))
	ref := make([]float32, n*rows)
	matmulRows(ref, x, n, w, 0, rows, make([]float32, scratchLen(cols)))
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("out %d: VNNI %v, Go %v", i, got[i], want[i])
		}
		tok, r := i/rows, i%rows
		row := make([]float32, cols)
		w.Row(r, row)
		var bound float64
		for j, v := range row {
			bound += math.Abs(float64(v)) * float64(a.d[tok*cols/32+j/32]) / 2
		}
		if d := math.Abs(float64(got[i] - ref[i])); d > bound*1.01+1e-5 {
			t.Fatalf("out %d: int8 %v, float %v: off by %.3g, bound %.3g", i, got[i], ref[i], d, bound)
		}
	}
}
