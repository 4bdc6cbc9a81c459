package cpu

import "github.com/batchd/batchd/engine/model"

// The row-lane form of the int8 path for Q8_0, Q4_0 and the other 32-value
// formats (Q4_1, Q5_0, Q5_1, IQ4_NL) on AVX512-VNNI: a
// kernel call covers sixteen rows, each in a lane of its own, so a token's
// float work per block (convert, scale, add) is one instruction for sixteen
// rows where the element-lane form (dotQ40Go) spends one per row, and each
// row's block is transposed once for every token of the pass. A row's
// result is its blocks' exact integer sums scaled and added in block order
// (dotQ80RowGo, dotQ40RowGo), whichever rows, shares or tokens it shares a
// call with. Without VNNI, Q8_0 runs its Go loop and the others keep the
// element-lane form (dotQ40AVX2, int8b.go).

// rowsTokens is the most tokens a kernel call takes: its accumulators and
// results (32 floats a token) live in the share's scratch.
const rowsTokens = 64

// rows16Kernel is a format's sixteen-row kernel; rowGo its Go loop.
type (
	rows16Kernel func(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
	rowGo        func(w []byte, qs []int8, d []float32, nb int) float32
)

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

// dotQ40RowGo is dotQ80RowGo for Q4_0: value e of a block is nibble e%16
// of its bytes (low for e < 16, high after) less 8.
func dotQ40RowGo(w []byte, qs []int8, d []float32, nb int) float32 {
	var acc float32
	for b := range nb {
		blk := w[b*18 : (b+1)*18]
		ds := f16(blk) * d[b]
		var p int32
		for e, q := range qs[b*q8Block : (b+1)*q8Block] {
			v := int32(blk[2+e%16]&0xF) - 8
			if e >= 16 {
				v = int32(blk[2+e%16]>>4) - 8
			}
			p += v * int32(q)
		}
		acc = acc + float32(float32(p)*ds)
	}
	return acc
}

// rows32Go is dotQ40RowGo for a block32 format (int8b.go): its values
// less any offset, and for the _1 formats the min times the activations'
// sum added after each block.
func rows32Go(w []byte, qs []int8, d []float32, nb int, f block32) float32 {
	var acc float32
	var v [32]int32
	for b := range nb {
		blk, x := w[b*f.size:(b+1)*f.size], qs[b*q8Block:(b+1)*q8Block]
		f.values(blk, &v)
		var p, s int32
		for e, q := range x {
			p += v[e] * int32(q)
			s += int32(q)
		}
		acc = acc + float32(float32(p)*(f16(blk)*d[b]))
		if f.min {
			acc = acc + float32(float32(s)*(f16(blk[2:])*d[b]))
		}
	}
	return acc
}

// rows32 is a block32 format's row kernel and its Go loop.
type rows32 struct {
	kern rows16Kernel
	f    block32
	slow rowGo
}

func newRows32(k rows16Kernel, f block32) rows32 {
	return rows32{k, f, func(w []byte, qs []int8, d []float32, nb int) float32 { return rows32Go(w, qs, d, nb, f) }}
}

var (
	q41Rows   = newRows32(q41Rows16VNNI, q41Int8)
	q50Rows   = newRows32(q50Rows16VNNI, q50Int8)
	q51Rows   = newRows32(q51Rows16VNNI, q51Int8)
	iq4nlRows = newRows32(iq4nlRows16VNNI, iq4nlInt8)
)

// matmulRows32 is matmulInt8 for a block32 format: the row kernel on
// VNNI, else the element-lane kernels (matmulBlock32).
func (kn *kernels) matmulRows32(out []float32, a *q8Acts, n int, w *model.Matrix, lo, hi int, scratch []float32, r *rows32) {
	if !kn.simd || !kn.vnni {
		kn.matmulBlock32(out, a, n, w, lo, hi, scratch[len(scratch)-resLen:], r.f)
		return
	}
	kn.matmulRows16(out, a, n, w, lo, hi, scratch, r.kern, r.slow)
}

// matmulRows16 is matmulInt8 on a row kernel: groups of sixteen rows
// aligned to the matrix (a share's first and last group may reach outside
// [lo, hi): computed whole, only its own rows kept), rows past the last
// whole group (every row without VNNI) by the Go loop, tokens in passes of
// up to rowsTokens.
func (kn *kernels) matmulRows16(out []float32, a *q8Acts, n int, w *model.Matrix, lo, hi int, scratch []float32,
	kern rows16Kernel, slow rowGo) {
	cols, rows := w.Cols, w.Rows
	nb, rb := cols/q8Block, w.Type.RowBytes(cols)
	whole := rows &^ 15
	if !kn.simd || !kn.vnni {
		whole = 0
	}
	pass := min(rowsTokens, len(scratch)/32)
	acc, res := scratch[:16*pass], scratch[16*pass:32*pass]
	for g := lo &^ 15; g < min(hi, whole); g += 16 {
		for t := 0; t < n; t += pass {
			k := min(pass, n-t)
			if g >= lo && g+16 <= hi {
				kern(&w.Data[g*rb], rb, &a.qs[t*cols], &a.d[t*nb], &a.nsum[t*nb], cols, nb, nb, k, &acc[0], &out[t*rows+g], rows)
				continue
			}
			kern(&w.Data[g*rb], rb, &a.qs[t*cols], &a.d[t*nb], &a.nsum[t*nb], cols, nb, nb, k, &acc[0], &res[0], 16)
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
			out[t*rows+r] = slow(row, a.qs[t*cols:(t+1)*cols], a.d[t*nb:(t+1)*nb], nb)
		}
	}
}
