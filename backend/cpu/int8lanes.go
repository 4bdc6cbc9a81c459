package cpu

import (
	"unsafe"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// The lane form of the Q4_K int8 kernel, on CPUs with AVX2 but not
// AVX512-VNNI (with it Q4_K runs in row lanes, int8rows.go). Per super-block, lane d (0..15) of a token holds the exact
// integer sum over the four 64-value chunks p of sc[2p + d/8] times the
// products of values 64p+4d .. 64p+4d+3, and lane e (0..7) of the min part
// m[e] times the activations' sum over sub-block e. Each lane is then
// scaled by the super-block's float factor and added into its own float
// lane; only after the last super-block are the lanes folded, in a fixed
// order. The Go loops below define the arithmetic; the assembly matches
// them bit for bit.

// laneAcc is one token's float lanes: 16 for the scaled sums, 8 for mins.
const laneAcc = 24

// q4kLanesGo adds super-blocks [0, nsb) of one row into acc for one token.
func q4kLanesGo(w []byte, qs []int8, d []float32, bs []int16, nsb int, acc []float32) {
	for b := range nsb {
		q4kLanesBlock(w[b*144:(b+1)*144], qs[b*qkK:(b+1)*qkK], d[b], bs[b*16:(b+1)*16], acc)
	}
}

// q4kLanesBlock adds one super-block's lanes into acc.
func q4kLanesBlock(blk []byte, x []int8, dx float32, bs []int16, acc []float32) {
	sc, m := quant.K4ScaleMins(blk)
	q := blk[16:]
	var s [16]int32
	for p := range 4 {
		for l := range 16 {
			for k := range 4 {
				by := 4*l + k // byte of the 64-byte chunk vector
				nib := int32(q[32*p+by%32] & 0xF)
				if by >= 32 {
					nib = int32(q[32*p+by-32] >> 4)
				}
				s[l] += int32(sc[2*p+l/8]) * nib * int32(x[64*p+by])
			}
		}
	}
	dd := dx * f16(blk)
	dm := dx * f16(blk[2:])
	for l, v := range s {
		acc[l] = acc[l] + float32(dd*float32(v))
	}
	for e := range 8 {
		mv := int32(m[e]) * (int32(bs[2*e]) + int32(bs[2*e+1]))
		acc[16+e] = acc[16+e] + float32(dm*float32(mv))
	}
}

// foldLanes is a token's result from its lanes: the sixteen folded to
// eight (l + l+8), those by hsum8, less the mins' eight by hsum8.
func foldLanes(acc []float32) float32 {
	var a, m [8]float32
	for i := range 8 {
		a[i] = acc[i] + acc[i+8]
		m[i] = acc[16+i]
	}
	return hsum8(&a) - hsum8(&m)
}

// laneScratch is q4kLanesNAVX2's scratch before the lanes, in floats.
const laneScratch = 352 / 4

// matmulKLanes is matmulInt8 for Q4_K without VNNI: each row against each
// token (q4kLanesAVX2, or the Go loop without AVX2), the lanes folded.
// Several tokens take q4kLanesNAVX2, which decodes a row's super-block
// once for them all (one token at a time decoded it for each: aggregate
// decode stopped growing at 8 sequences).
func (kn *kernels) matmulKLanes(out []float32, a *q8KActs, n int, w *model.Matrix, lo, hi int, scratch []float32) {
	cols, rows := w.Cols, w.Rows
	nsb, rb := cols/qkK, w.Type.RowBytes(cols)
	if kn.simd && n > 1 {
		sc := (*int16)(unsafe.Pointer(&scratch[0]))
		step := min(n, (len(scratch)-laneScratch)/laneAcc)
		for r := lo; r < hi; r++ {
			row := w.Data[r*rb : (r+1)*rb]
			for t0 := 0; t0 < n; t0 += step {
				m := min(step, n-t0)
				q4kLanesNAVX2(&row[0], &a.qs[t0*cols], cols, &a.d[t0*nsb], nsb, &a.bs[t0*cols/16], cols/16, nsb, m, sc,
					&scratch[laneScratch], &out[t0*rows+r], rows)
			}
		}
		return
	}
	lanes := scratch[:laneAcc]
	// The AVX2 kernel's scales scratch (16 words) follows, out of the
	// share's scratch (a local array would escape).
	sc := (*int16)(unsafe.Pointer(&scratch[laneAcc]))
	for r := lo; r < hi; r++ {
		row := w.Data[r*rb : (r+1)*rb]
		for t := range n {
			if kn.simd {
				q4kLanesAVX2(&row[0], &a.qs[t*cols], &a.d[t*nsb], &a.bs[t*cols/16], nsb, sc, &lanes[0])
			} else {
				clear(lanes)
				q4kLanesGo(row, a.qs[t*cols:(t+1)*cols], a.d[t*nsb:(t+1)*nsb], a.bs[t*cols/16:(t+1)*cols/16], nsb, lanes)
			}
			out[t*rows+r] = foldLanes(lanes)
		}
	}
}
