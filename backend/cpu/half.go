package cpu

import (
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// ggml's CPU matmul converts its input to the weights' vec_dot_type, and
// an F16 matrix's is F16: its activations are rounded to half precision
// (to nearest, ties to even) before the products. llama.cpp's AVX2 build
// does so on every F16 matrix (the references of models/arch2 were made
// with it: their F16 classifiers over logits of a few units show it as a
// 1e-3 difference in log-probability); batchd follows that, whatever the
// machine.

// halfInput returns x's n rows of cols rounded through half precision,
// in the backend's scratch (valid until the next call).
func (b *Backend) halfInput(x []float32, n, cols int) []float32 {
	size := n * cols
	if cap(b.x16) < size {
		b.x16, b.h16 = make([]float32, size), make([]uint16, size)
	}
	out, h := b.x16[:size], b.h16[:size]
	done := 0
	if b.kern.simd {
		if done = size &^ 7; done > 0 {
			toF16AVX2(&x[0], &h[0], done)
		}
	}
	for i := done; i < size; i++ {
		h[i] = quant.F32ToF16(x[i])
	}
	for i, v := range h {
		out[i] = f16Table[v]
	}
	return out
}

// halfFor is halfInput when gate or up (the FFN's pair) is F16, else nil.
func (b *Backend) halfFor(x []float32, n int, gate, up *model.Matrix) []float32 {
	for _, w := range []*model.Matrix{gate, up} {
		if w != nil && w.Type == quant.F16 {
			return b.halfInput(x, n, w.Cols)
		}
	}
	return nil
}

// inputFor is the input w multiplies: x16 (x rounded to half) for an F16
// w when it was made, else x.
func inputFor(w *model.Matrix, x, x16 []float32) []float32 {
	if x16 != nil && w.Type == quant.F16 {
		return x16
	}
	return x
}
