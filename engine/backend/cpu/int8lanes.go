package cpu

import (
	"unsafe"

	"github.com/batchd/batchd/engine/model"
	"github.com/batchd/batchd/engine/quant"
)

// The lane form of the Q4_K int8 kernel (AVX-512, several tokens per pass
// over a row). Per super-block, lane d (0..15) of a token holds the exact
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
	kLanesGo(w, 144, 16, -1, qs, d, bs, nsb, acc)
}

// q5kLanesGo is q4kLanesGo for Q5_K: each value's fifth bit comes from
// qh (bit 2p of qh[i] for the low nibbles of chunk p, bit 2p+1 for the high).
func q5kLanesGo(w []byte, qs []int8, d []float32, bs []int16, nsb int, acc []float32) {
	kLanesGo(w, 176, 48, 16, qs, d, bs, nsb, acc)
}

// kLanesGo is the lane arithmetic of Q4_K (qhOff < 0) and Q5_K blocks of
// size bytes, their nibbles at qOff and high bits at qhOff.
func kLanesGo(w []byte, size, qOff, qhOff int, qs []int8, d []float32, bs []int16, nsb int, acc []float32) {
	for b := range nsb {
		blk, x := w[b*size:(b+1)*size], qs[b*qkK:(b+1)*qkK]
		sc, m := quant.K4ScaleMins(blk)
		q := blk[qOff:]
		var s [16]int32
		for p := range 4 {
			for l := range 16 {
				for k := range 4 {
					by := 4*l + k // byte of the 64-byte chunk vector
					var nib int32
					i, bit := by, 2*p
					if by < 32 {
						nib = int32(q[32*p+by] & 0xF)
					} else {
						nib = int32(q[32*p+by-32] >> 4)
						i, bit = by-32, 2*p+1
					}
					if qhOff >= 0 && blk[qhOff+i]>>bit&1 != 0 {
						nib += 16
					}
					s[l] += int32(sc[2*p+l/8]) * nib * int32(x[64*p+by])
				}
			}
		}
		dd := d[b] * quant.F16ToF32(uint16(blk[0])|uint16(blk[1])<<8)
		dm := d[b] * quant.F16ToF32(uint16(blk[2])|uint16(blk[3])<<8)
		for l, v := range s {
			acc[l] = acc[l] + float32(dd*float32(v))
		}
		for e := range 8 {
			mv := int32(m[e]) * (int32(bs[b*16+2*e]) + int32(bs[b*16+2*e+1]))
			acc[16+e] = acc[16+e] + float32(dm*float32(mv))
		}
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

// laneKernels are a format's lane-form kernels: the assembly (up to eight
// tokens per call) and the Go loop it matches.
type laneKernels struct {
	asm    func(w *byte, qs *int8, d *float32, bs *int16, qstride, dstride, bstride, nsb, ntok int, acc, res *float32)
	avx2   func(w *byte, qs *int8, d *float32, bs *int16, nsb int, sc *int16, acc *float32) // one token; nil: none
	goLoop func(w []byte, qs []int8, d []float32, bs []int16, nsb int, acc []float32)
}

var (
	q4kLanes = laneKernels{q4kLanesAVX512, q4kLanesAVX2, q4kLanesGo}
	q5kLanes = laneKernels{q5kLanesAVX512, nil, q5kLanesGo}
)

// matmulKLanes is matmulInt8 for Q4_K and Q5_K in the lane form: each row
// against up to eight tokens per pass (scratch holds their lanes). More per
// pass measured slower at 64 tokens on Zen 4.
func (kn *kernels) matmulKLanes(out []float32, a *q8KActs, n int, w *model.Matrix, lo, hi int, scratch []float32, k laneKernels) {
	cols, rows := w.Cols, w.Rows
	nsb, rb := cols/qkK, w.Type.RowBytes(cols)
	const group = 8
	acc, res := scratch[:group*laneAcc], scratch[group*laneAcc:group*laneAcc+group]
	// The AVX2 kernel's scales scratch (16 words) follows, out of the
	// share's scratch (a local array would escape through the func value).
	sc := (*int16)(unsafe.Pointer(&scratch[group*laneAcc+group]))
	for r := lo; r < hi; r++ {
		row := w.Data[r*rb : (r+1)*rb]
		for t0 := 0; t0 < n; t0 += group {
			nt := min(group, n-t0)
			if kn.simd && kn.vnni {
				k.asm(&row[0], &a.qs[t0*cols], &a.d[t0*nsb], &a.bs[t0*cols/16], cols, nsb, cols/16, nsb, nt, &acc[0], &res[0])
			} else {
				for t := range nt {
					tt, lanes := t0+t, acc[t*laneAcc:(t+1)*laneAcc]
					if kn.simd && k.avx2 != nil {
						k.avx2(&row[0], &a.qs[tt*cols], &a.d[tt*nsb], &a.bs[tt*cols/16], nsb, sc, &lanes[0])
					} else {
						clear(lanes)
						k.goLoop(row, a.qs[tt*cols:(tt+1)*cols], a.d[tt*nsb:(tt+1)*nsb], a.bs[tt*cols/16:(tt+1)*cols/16], nsb, lanes)
					}
					res[t] = foldLanes(lanes)
				}
			}
			for t := range nt {
				out[(t0+t)*rows+r] = res[t]
			}
		}
	}
}
