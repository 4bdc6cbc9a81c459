package cpu

import (
	"math"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/quant"
)

// llama.cpp (since its attention rotation, PR 21038) rotates what a block
// format stores: with a quantized K and a head size a multiple of 64, Q
// and K are multiplied by an orthonormal Walsh-Hadamard matrix after RoPE
// (dot products unchanged, outliers spread over the block, so its scale
// fits more values); with a quantized V, V is, and the attention output is
// rotated back (the matrix is its own inverse). K takes the largest power
// of two dividing the head size, V always 64. batchd stores the same bytes.

// kvRotations is the rotation sizes for K (and Q) and for V, 0 for none.
func kvRotations(kv backend.KVTypes, hd int) (rotK, rotV int) {
	if hd%64 != 0 {
		return 0, 0
	}
	if quantizedKV(kv.K) {
		rotK = 64
		for hd%(2*rotK) == 0 {
			rotK *= 2
		}
	}
	if quantizedKV(kv.V) {
		rotV = 64
	}
	return rotK, rotV
}

func quantizedKV(t quant.DType) bool { return t != quant.F32 && t != quant.F16 }

// rotate multiplies each n values of x (n a power of two, 64 or more) by
// the n x n Walsh-Hadamard matrix scaled by 1/sqrt(n), as ggml's fast
// transform computes it: the values scaled first, then the butterflies
// (u+v, u-v) from pairs one apart to pairs n/2 apart, each rounded to
// float32. With SIMD, each 64 values' scaling and first six passes run in
// one kernel (fwht64AVX2), the same operations on the same values.
func rotate(x []float32, n int, simd bool) {
	scale := 1 / float32(math.Sqrt(float64(n)))
	if simd {
		for c := 0; c < len(x); c += n {
			r := x[c : c+n]
			for s := 0; s < n; s += 64 {
				fwht64AVX2(&r[s], scale)
			}
			butterflies(r, 64)
		}
		return
	}
	for i := range x {
		x[i] *= scale
	}
	for c := 0; c < len(x); c += n {
		butterflies(x[c:c+n], 1)
	}
}

// butterflies runs the passes of pairs from apart to len(r)/2 apart.
func butterflies(r []float32, from int) {
	n := len(r)
	for l := from; l < n; l <<= 1 {
		for i := 0; i < n; i += 2 * l {
			for j := i; j < i+l; j++ {
				u, v := r[j], r[j+l]
				r[j], r[j+l] = u+v, u-v
			}
		}
	}
}
