package cpu

import (
	"unsafe"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// The int8 path for IQ4_XS, Q3_K and Q2_K against q8_K activations (on
// AVX512-VNNI in row lanes, int8rows.go, to the same Go loops). Per
// super-block, the sum over its sub-blocks of scale times (values .
// activations) is an exact integer S (Q3_K's levels offset by 4 and Q2_K's
// mins go through the activations' 16-sums), and the float work is
// acc = acc + (dx*d)*S (Q2_K: then - (dx*dmin)*C), super-block by
// super-block. The Go loops define it; the AVX2 kernels (int8x_amd64.s)
// match them bit for bit.

// superScaled is one such format: its kernels for one token and for four
// (sc: scratch for a block's unpacked scales, 64 words) and its Go loop.
type superScaled struct {
	asm    func(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32
	asm4   func(w *byte, qs *int8, d *float32, bs *int16, nsb, qstride, dstride, bstride int, sc *int16, out *float32)
	goLoop func(w []byte, qs []int8, d []float32, bs []int16, nsb int) float32
}

var (
	iq4xsInt8 = superScaled{iq4xsDotAVX2, iq4xsDot4AVX2, dotIQ4XSGo}
	q3kInt8   = superScaled{q3kDotAVX2, q3kDot4AVX2, dotQ3KGo}
	q2kInt8   = superScaled{q2kDotAVX2, q2kDot4AVX2, dotQ2KGo}
)

// matmulSuper is matmulInt8 for a superScaled format: a row against four
// tokens at a time (its blocks unpacked once for the four), then one by one.
// The scales' scratch comes from the share's (a local array would escape
// through the function values and allocate on every call).
func (kn *kernels) matmulSuper(out []float32, a *q8KActs, n int, w *model.Matrix, lo, hi int, scratch []float32, f superScaled) {
	cols, rows := w.Cols, w.Rows
	nsb, rb := cols/qkK, w.Type.RowBytes(cols)
	res := scratch[len(scratch)-resLen:]
	sc := unsafe.Slice((*int16)(unsafe.Pointer(&scratch[0])), 64)
	full := 0
	if kn.simd {
		full = n &^ 3
	}
	for r := lo; r < hi; r++ {
		row := w.Data[r*rb : (r+1)*rb]
		for t := 0; t < full; t += 4 {
			f.asm4(&row[0], &a.qs[t*cols], &a.d[t*nsb], &a.bs[t*cols/16], nsb, cols, 4*nsb, cols/8, &sc[0], &res[0])
			for j := range 4 {
				out[(t+j)*rows+r] = res[j]
			}
		}
		for t := full; t < n; t++ {
			qs, d, bs := a.qs[t*cols:(t+1)*cols], a.d[t*nsb:(t+1)*nsb], a.bs[t*cols/16:(t+1)*cols/16]
			if kn.simd {
				out[t*rows+r] = f.asm(&row[0], &qs[0], &d[0], &bs[0], &sc[0], nsb)
			} else {
				out[t*rows+r] = f.goLoop(row, qs, d, bs, nsb)
			}
		}
	}
}

func sbFloat(acc float32, d, h float32, s int32) float32 {
	dd := d * h
	return acc + float32(dd*float32(s))
}

func dotIQ4XSGo(w []byte, qs []int8, d []float32, _ []int16, nsb int) float32 {
	var acc float32
	for b := range nsb {
		blk, x := w[b*136:(b+1)*136], qs[b*qkK:(b+1)*qkK]
		var s int32
		for ib := range 8 {
			q, xs := blk[8+16*ib:], x[32*ib:]
			var p int32
			for j := range 16 {
				p += int32(quant.IQ4Grid[q[j]&0xf])*int32(xs[j]) + int32(quant.IQ4Grid[q[j]>>4])*int32(xs[16+j])
			}
			s += int32(quant.IQ4XSScale(blk, ib)) * p
		}
		acc = sbFloat(acc, d[b], f16(blk), s)
	}
	return acc
}

// lowLevel is a Q2_K or Q3_K 2-bit level: element l of group g, from the
// 64 bytes q (byte 32*(g/8) + 16*(g%2) + l, shifted by 2*((g%8)/2)).
func lowLevel(q []byte, g, l int) int32 {
	return int32(q[32*(g/8)+16*(g%2)+l]>>(2*uint((g%8)/2))) & 3
}

func dotQ3KGo(w []byte, qs []int8, d []float32, bs []int16, nsb int) float32 {
	var acc float32
	for b := range nsb {
		blk, x := w[b*110:(b+1)*110], qs[b*qkK:(b+1)*qkK]
		scales := quant.Q3KScales(blk)
		var s, c int32
		for g := range 16 {
			var p int32
			for l := range 16 {
				hbit := int32(blk[16*(g%2)+l]>>uint(4*(g/8)+(g%8)/2)) & 1
				p += (lowLevel(blk[32:96], g, l) + 4*hbit) * int32(x[16*g+l])
			}
			sc := int32(scales[g])
			s += sc * p
			c += sc * int32(bs[b*16+g])
		}
		acc = sbFloat(acc, d[b], f16(blk[108:]), s-4*c)
	}
	return acc
}

func dotQ2KGo(w []byte, qs []int8, d []float32, bs []int16, nsb int) float32 {
	var acc float32
	for b := range nsb {
		blk, x := w[b*84:(b+1)*84], qs[b*qkK:(b+1)*qkK]
		var s, c int32
		for g := range 16 {
			var p int32
			for l := range 16 {
				p += lowLevel(blk[16:80], g, l) * int32(x[16*g+l])
			}
			s += int32(blk[g]&0xf) * p
			c += int32(blk[g]>>4) * int32(bs[b*16+g])
		}
		acc = sbFloat(acc, d[b], f16(blk[80:]), s)
		dm := d[b] * f16(blk[82:])
		acc = acc - float32(dm*float32(c))
	}
	return acc
}
