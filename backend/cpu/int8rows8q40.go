package cpu

import "github.com/batchd/batchd/model"

// Q4_0 and Q8_0 on AVX2 without VNNI read the VNNI kernels' packed groups
// of sixteen rows (packQ40, packQ80) as two halves of eight, each row in a
// dword lane (q40Rows8AVX2 and q80Rows8AVX2, or q40Rows8AVXVNNI and
// q80Rows8AVXVNNI with AVX-VNNI): rows32Go's bits, as the VNNI kernels'
// are, so a model's results are the same on both.

// halfKernel is such a kernel: half (0 or 1) of the sixteen-row group at
// w against ntok tokens' q8_0 activations (qstride apart, their negated
// sums and scales nb apart), results ostride apart.
type halfKernel func(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

// groupKernel takes a whole group of sixteen rows, a token at a time, for
// passes of fewer than four tokens (q40Rows16AVX2, q80Rows16AVX2 and their
// AVX-VNNI forms).
type groupKernel func(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

// matmulHalves is matmulInt8 on a halfKernel, on w's packed copy p: halves of sixteen-row groups aligned to the matrix (a
// share's first and last may reach outside [lo, hi): computed whole, only
// its own rows kept), tokens in passes of up to rowsTokens, each pass
// over all the groups (passes of under four tokens by group where a
// whole group is the share's); rows past the last group by rows32Go
// (packing copies them as they are).
func (kn *kernels) matmulHalves(out []float32, a *acts, n int, w *model.Matrix, p []byte, lo, hi int, scratch []float32, kern halfKernel, group groupKernel) {
	cols, rows, rb := w.Cols, w.Rows, w.Type.RowBytes(w.Cols)
	src, stride := a.q8.qs, cols
	nb, whole := cols/q8Block, rows&^15
	pass := min(n, rowsTokens)
	res := scratch[:8*pass]
	chunk := 8 * max(1, rows8Chunk/(8*rb)) // half-groups: 8 rows
	for c0 := lo &^ 7; c0 < min(hi, whole); c0 += chunk {
		c1 := min(c0+chunk, hi, whole)
		for t := 0; t < n; t += pass {
			k := min(pass, n-t)
			qs, nsum, d := &src[t*stride], &a.q8.nsum[t*nb], &a.q8.d[t*nb]
			for g := c0; g < c1; g += 8 {
				grp, half := &p[(g&^15)*rb], (g/8)%2
				if group != nil && k < 4 && g%16 == 0 && g >= lo && g+16 <= c1 {
					group(grp, qs, nsum, d, stride, nb, k, &out[t*rows+g], rows)
					g += 8
					continue
				}
				if g >= lo && g+8 <= hi {
					kern(grp, half, qs, nsum, d, stride, nb, k, &out[t*rows+g], rows)
					continue
				}
				kern(grp, half, qs, nsum, d, stride, nb, k, &res[0], 8)
				for j := range k {
					for r := max(g, lo); r < min(g+8, hi); r++ {
						out[(t+j)*rows+r] = res[j*8+r-g]
					}
				}
			}
		}
	}
	for r := max(lo, whole); r < hi; r++ {
		for t := range n {
			out[t*rows+r] = rowTail(p[r*rb:(r+1)*rb], a, t, w.Type, cols)
		}
	}
}
