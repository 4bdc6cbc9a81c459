package cpu

import "github.com/batchd/batchd/engine/model"

// The row-lane form of the Q8_0 int8 path (AVX512-VNNI): a kernel call
// covers sixteen rows, each in a lane of its own, so a token's float work
// per block (convert, scale, add) is one instruction for sixteen rows
// where the lane form (dotQ80Go) spends one per row, and each row's
// 32-byte block is transposed once for every token of the pass. A row's
// result is its blocks' exact integer sums scaled and added in block order
// (dotQ80RowGo), whichever lanes, shares or tokens it shares a call with.

// q80RowsTokens is the most tokens a kernel call takes: its accumulators
// and results (32 floats a token) live in the share's scratch.
const q80RowsTokens = 64

// dotQ80RowGo is the Q8_0 x q8_0 dot of one row and one token as the row
// kernel computes it: per block the exact integer sum, times (weight scale
// times activation scale), added in block order.
func dotQ80RowGo(w []byte, qs []int8, d []float32, nb int) float32 {
	var acc float32
	for b := range nb {
		blk := w[b*34 : (b+1)*34]
		ds := f16(blk) * d[b]
		var p int32
		for e, q := range qs[b*q8Block : (b+1)*q8Block] {
			p += int32(int8(blk[2+e])) * int32(q)
		}
		acc = acc + float32(float32(p)*ds)
	}
	return acc
}

// matmulQ80Rows is matmulInt8 for Q8_0 on the row kernel: groups of
// sixteen rows aligned to the matrix (a share's first and last group may
// reach outside [lo, hi): computed whole, only its own rows kept), rows
// past the last whole group (every row without VNNI) by dotQ80RowGo, tokens in passes of up to
// q80RowsTokens.
func (kn *kernels) matmulQ80Rows(out []float32, a *q8Acts, n int, w *model.Matrix, lo, hi int, scratch []float32) {
	cols, rows := w.Cols, w.Rows
	nb, rb := cols/q8Block, w.Type.RowBytes(cols)
	whole := rows &^ 15
	if !kn.simd || !kn.vnni {
		whole = 0 // the Go loop, row by row
	}
	pass := min(q80RowsTokens, len(scratch)/32)
	acc, res := scratch[:16*pass], scratch[16*pass:32*pass]
	for g := lo &^ 15; g < min(hi, whole); g += 16 {
		for t := 0; t < n; t += pass {
			k := min(pass, n-t)
			if g >= lo && g+16 <= hi {
				q80Rows16VNNI(&w.Data[g*rb], rb, &a.qs[t*cols], &a.d[t*nb], &a.bias[t*nb], cols, nb, nb, k,
					&acc[0], &out[t*rows+g], rows)
				continue
			}
			q80Rows16VNNI(&w.Data[g*rb], rb, &a.qs[t*cols], &a.d[t*nb], &a.bias[t*nb], cols, nb, nb, k,
				&acc[0], &res[0], 16)
			for j := range k {
				for r := max(g, lo); r < min(g+16, hi); r++ {
					out[(t+j)*rows+r] = res[j*16+r-g]
				}
			}
		}
	}
	for r := max(lo, whole); r < hi; r++ {
		row := w.Data[r*rb : (r+1)*rb]
		for t := range n {
			out[t*rows+r] = dotQ80RowGo(row, a.qs[t*cols:(t+1)*cols], a.d[t*nb:(t+1)*nb], nb)
		}
	}
}
