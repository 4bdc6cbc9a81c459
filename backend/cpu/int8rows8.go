package cpu

import (
	"github.com/batchd/batchd/model"
)

// The row form of Q4_K on AVX2 without VNNI (q4kRows8AVX2): eight rows a
// call, each in a dword lane, from a copy packed at load so the kernel
// reads a dword of every row with one load and transposes nothing. Its
// float work per token and super-block is two products and two adds for
// eight rows, where the lane form (int8lanes.go) spent 24 lanes' for one;
// its result is dotQ4KRowGo's, as the VNNI row kernels' is.

// packQ4K8 writes rows [8g, 8g+8) of src (Q4_K, rb bytes a row) packed into
// dst: per super-block the rows' head dwords (d and dmin, then scale bytes
// 0-3, 4-7 and 8-11) at 32k+4j for row j, then dword c of the 128 nibble
// bytes at 128+32c+4j: the group's eight super-blocks again.
func packQ4K8(dst, src []byte, rb, g int) {
	for b := range rb / 144 {
		out := dst[8*144*b : 8*144*(b+1)]
		for j := range 8 {
			blk := src[(8*g+j)*rb+144*b:][:144]
			for k := range 4 {
				copy(out[32*k+4*j:][:4], blk[4*k:])
			}
			for c := range 32 {
				copy(out[128+32*c+4*j:][:4], blk[16+4*c:])
			}
		}
	}
}

// rows8Scratch is q4kRows8AVX2's scratch before its tokens' sums (eight
// floats a token), in floats.
const rows8Scratch = 576 / 4

// matmulQ4KRows8 is matmulInt8 for Q4_K on AVX2 without VNNI, on w's packed
// copy p: groups of eight rows aligned to the matrix (a share's first and
// last may reach outside [lo, hi): computed whole, only its own rows kept),
// tokens in passes of up to rowsTokens, each pass over all the groups so
// its activations stay in cache while the weights stream; rows past the
// last group by dotQ4KRowGo (packing copies them as they are).
func (kn *kernels) matmulQ4KRows8(out []float32, a *q8KActs, n int, w *model.Matrix, p []byte, lo, hi int, scratch []float32) {
	cols, rows, rb := w.Cols, w.Rows, w.Type.RowBytes(w.Cols)
	nsb, whole := cols/qkK, rows&^7
	pass := min(n, rowsTokens)
	scr, res := scratch[:rows8Scratch+8*pass], scratch[rows8Scratch+8*pass:rows8Scratch+16*pass]
	for t := 0; t < n; t += pass {
		k := min(pass, n-t)
		qs, bs, d := &a.qs[t*cols], &a.bs[t*cols/16], &a.d[t*nsb]
		for g := lo &^ 7; g < min(hi, whole); g += 8 {
			if g >= lo && g+8 <= hi {
				q4kRows8AVX2(&p[g*rb], qs, bs, d, cols, nsb, k, &scr[0], &out[t*rows+g], rows)
				continue
			}
			q4kRows8AVX2(&p[g*rb], qs, bs, d, cols, nsb, k, &scr[0], &res[0], 8)
			for j := range k {
				for r := max(g, lo); r < min(g+8, hi); r++ {
					out[(t+j)*rows+r] = res[j*8+r-g]
				}
			}
		}
	}
	for r := max(lo, whole); r < hi; r++ {
		for t := range n {
			out[t*rows+r] = dotQ4KRowGo(p[r*rb:(r+1)*rb], a.qs[t*cols:(t+1)*cols], a.d[t*nsb:(t+1)*nsb], a.nsum[t*cols/32:(t+1)*cols/32], nsb)
		}
	}
}
