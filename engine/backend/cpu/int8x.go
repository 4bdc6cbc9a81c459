package cpu

import (
	"github.com/batchd/batchd/engine/model"
	"github.com/batchd/batchd/engine/quant"
)

// The int8 path for IQ4_XS, Q3_K and Q2_K against q8_K activations. Per
// super-block, the sum over its sub-blocks of scale times (values .
// activations) is an exact integer S (Q3_K's levels offset by 4 and Q2_K's
// mins go through the activations' 16-sums), and the float work is
// acc = acc + (dx*d)*S (Q2_K: then - (dx*dmin)*C), super-block by
// super-block. The Go loops define it; the AVX2 kernels (int8x_amd64.s)
// match them bit for bit, on the sub-block scales unpacked here per row.

// sbChunk is how many super-blocks' scales a row unpacks at a time.
const sbChunk = 64

// superScaled is one such format: its kernel, its Go loop, and how a
// super-block's int16 scales are unpacked for the kernel (per sb: per words).
type superScaled struct {
	size, per int
	unpack    func(blk []byte, sc []int16)
	asm       func(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int, acc float32) float32
	goLoop    func(w []byte, qs []int8, d []float32, bs []int16, nsb int) float32
}

var (
	iq4xsInt8 = superScaled{136, 8, iq4xsScales, func(w *byte, qs *int8, d *float32, _ *int16, sc *int16, nsb int, acc float32) float32 {
		return iq4xsDotAVX2(w, qs, d, sc, nsb, acc)
	}, dotIQ4XSGo}
	q3kInt8 = superScaled{110, 16, q3kScales, q3kDotAVX2, dotQ3KGo}
	q2kInt8 = superScaled{84, 32, q2kScales, q2kDotAVX2, dotQ2KGo}
)

// matmulSuper is matmulInt8 for a superScaled format: a row's scales
// unpacked once, then the row against each token.
func (kn *kernels) matmulSuper(out []float32, a *q8KActs, n int, w *model.Matrix, lo, hi int, f superScaled) {
	cols, rows := w.Cols, w.Rows
	nsb, rb := cols/qkK, w.Type.RowBytes(cols)
	var sc [sbChunk * 32]int16
	for r := lo; r < hi; r++ {
		row := w.Data[r*rb : (r+1)*rb]
		if !kn.simd {
			for t := range n {
				out[t*rows+r] = f.goLoop(row, a.qs[t*cols:(t+1)*cols], a.d[t*nsb:(t+1)*nsb], a.bs[t*cols/16:(t+1)*cols/16], nsb)
			}
			continue
		}
		for t := range n {
			var acc float32
			for b0 := 0; b0 < nsb; b0 += sbChunk {
				k := min(sbChunk, nsb-b0)
				if t == 0 || nsb > sbChunk {
					for b := range k {
						f.unpack(row[(b0+b)*f.size:], sc[b*f.per:(b+1)*f.per])
					}
				}
				e := t*cols + b0*qkK
				acc = f.asm(&row[b0*f.size], &a.qs[e], &a.d[t*nsb+b0], &a.bs[e/16], &sc[0], k, acc)
			}
			out[t*rows+r] = acc
		}
	}
}

func iq4xsScale(blk []byte, ib int) int32 {
	sh := uint16(blk[2]) | uint16(blk[3])<<8
	return int32(blk[4+ib/2]>>(4*uint(ib%2))&0xf) | int32((sh>>(2*uint(ib)))&3)<<4 - 32
}

func iq4xsScales(blk []byte, sc []int16) {
	for ib := range 8 {
		sc[ib] = int16(iq4xsScale(blk, ib))
	}
}

// q3kScale is group j's 6-bit scale less 32.
func q3kScale(blk []byte, j int) int32 {
	sc12 := blk[96:108]
	lo := sc12[j%8] >> (4 * uint(j/8)) & 0xf
	hi := sc12[8+j%4] >> (2 * uint(j/4)) & 3
	return int32(lo|hi<<4) - 32
}

func q3kScales(blk []byte, sc []int16) {
	for j := range 16 {
		sc[j] = int16(q3kScale(blk, j))
	}
}

func q2kScales(blk []byte, sc []int16) {
	for j, s := range blk[:16] {
		sc[j], sc[16+j] = int16(s&0xf), int16(s>>4)
	}
}

// kvIQ4 is IQ4's grid, as the kernels read it.
var kvIQ4 = [16]int32{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

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
				p += kvIQ4[q[j]&0xf]*int32(xs[j]) + kvIQ4[q[j]>>4]*int32(xs[16+j])
			}
			s += iq4xsScale(blk, ib) * p
		}
		acc = sbFloat(acc, d[b], quant.F16ToF32(uint16(blk[0])|uint16(blk[1])<<8), s)
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
		var s, c int32
		for g := range 16 {
			var p int32
			for l := range 16 {
				hbit := int32(blk[16*(g%2)+l]>>uint(4*(g/8)+(g%8)/2)) & 1
				p += (lowLevel(blk[32:96], g, l) + 4*hbit) * int32(x[16*g+l])
			}
			sc := q3kScale(blk, g)
			s += sc * p
			c += sc * int32(bs[b*16+g])
		}
		acc = sbFloat(acc, d[b], quant.F16ToF32(uint16(blk[108])|uint16(blk[109])<<8), s-4*c)
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
		acc = sbFloat(acc, d[b], quant.F16ToF32(uint16(blk[80])|uint16(blk[81])<<8), s)
		dm := d[b] * quant.F16ToF32(uint16(blk[82])|uint16(blk[83])<<8)
		acc = acc - float32(dm*float32(c))
	}
	return acc
}
