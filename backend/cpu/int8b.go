package cpu

import (
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// The int8 path for Q4_1, Q5_0, Q5_1 and IQ4_NL against q8_0
// activations on CPUs without VNNI (with it they take the row form,
// int8rows.go), in Q4_0's lane form: lane l of a block holds the exact sum
// over elements 4l..4l+3 of value times activation, scaled by (weight
// scale * activation scale) and added into float lane l; the _1 formats
// then add their min times the lane's activation sum, scaled the same way.
// The lanes fold as hsum8. lanes32Go defines it; the AVX2 kernels
// (int8b_amd64.s) match it bit for bit. (Q8_0 takes the row form,
// int8rows.go: this one was slower than its fused float kernels.)

// block32 is one such format.
type block32 struct {
	kind quant.DType
	size int
	min  bool // an fp16 min follows the scale
	asm  func(w *byte, qs *int8, d *float32, nb int) float32
	asm4 func(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)
}

func nibbles(q []byte, v *[32]int32) {
	for j := range 16 {
		v[j], v[j+16] = int32(q[j]&0xf), int32(q[j]>>4)
	}
}

func fifthBits(qh []byte, v *[32]int32) {
	h := uint32(qh[0]) | uint32(qh[1])<<8 | uint32(qh[2])<<16 | uint32(qh[3])<<24
	for j := range 32 {
		v[j] |= int32(h>>uint(j)&1) << 4
	}
}

// values sets v to a block's integer values (less any offset). A switch,
// not a function value: v stays on the caller's stack.
func (f *block32) values(b []byte, v *[32]int32) {
	switch f.kind {
	case quant.Q8_0:
		for j := range v {
			v[j] = int32(int8(b[2+j]))
		}
	case quant.Q4_0:
		nibbles(b[2:], v)
		for j := range v {
			v[j] -= 8
		}
	case quant.Q4_1:
		nibbles(b[4:], v)
	case quant.Q5_0:
		nibbles(b[6:], v)
		fifthBits(b[2:], v)
		for j := range v {
			v[j] -= 16
		}
	case quant.Q5_1:
		nibbles(b[8:], v)
		fifthBits(b[4:], v)
	case quant.IQ4_NL:
		nibbles(b[2:], v)
		for j := range v {
			v[j] = int32(quant.IQ4Grid[v[j]])
		}
	}
}

var (
	q41Int8   = block32{quant.Q4_1, 20, true, dotQ41AVX2, dotQ41x4AVX2}
	q50Int8   = block32{quant.Q5_0, 22, false, dotQ50AVX2, dotQ50x4AVX2}
	q51Int8   = block32{quant.Q5_1, 24, true, dotQ51AVX2, dotQ51x4AVX2}
	iq4nlInt8 = block32{quant.IQ4_NL, 18, false, dotIQ4NLAVX2, dotIQ4NLx4AVX2}
	q80Int8   = block32{quant.Q8_0, 34, false, dotQ80LanesAVX2, dotQ80Lanesx4AVX2}
)

// lanes32Go is the int8 dot of one row of f's blocks and one token.
func lanes32Go(w []byte, qs []int8, d []float32, nb int, f block32) float32 {
	fp := &f
	var acc [8]float32
	var v [32]int32
	for b := range nb {
		blk, x := w[b*f.size:(b+1)*f.size], qs[b*q8Block:(b+1)*q8Block]
		fp.values(blk, &v)
		ds := f16(blk) * d[b]
		ms := float32(0)
		if f.min {
			ms = f16(blk[2:]) * d[b]
		}
		for l := range 8 {
			var p, s int32
			for k := range 4 {
				e := 4*l + k
				p += v[e] * int32(x[e])
				s += int32(x[e])
			}
			acc[l] = acc[l] + float32(float32(p)*ds)
			if f.min {
				acc[l] = acc[l] + float32(float32(s)*ms)
			}
		}
	}
	return hsum8(&acc)
}

// matmulBlock32 is matmulInt8 for a block32 format: four tokens per pass
// over a row, then one at a time.
func (kn *kernels) matmulBlock32(out []float32, a *q8Acts, n int, w *model.Matrix, lo, hi int, res []float32, f block32) {
	cols, rows := w.Cols, w.Rows
	nb, rb := cols/q8Block, w.Type.RowBytes(cols)
	full := 0
	if kn.simd {
		full = n &^ 3
	}
	for r := lo; r < hi; r++ {
		row := w.Data[r*rb : (r+1)*rb]
		for t := 0; t < full; t += 4 {
			f.asm4(&row[0], &a.qs[t*cols], &a.d[t*nb], cols, nb, nb, &res[0])
			for j := range 4 {
				out[(t+j)*rows+r] = res[j]
			}
		}
		for t := full; t < n; t++ {
			qs, d := a.qs[t*cols:(t+1)*cols], a.d[t*nb:(t+1)*nb]
			if kn.simd {
				out[t*rows+r] = f.asm(&row[0], &qs[0], &d[0], nb)
			} else {
				out[t*rows+r] = lanes32Go(row, qs, d, nb, f)
			}
		}
	}
}
