package cpu

import (
	"math"

	"github.com/batchd/batchd/quant"
)

// The int8 path's K-quant side: activations quantized to ggml's block_q8_K
// (256 values, one float32 scale, sums of each 16) as quantize_row_q8_K_ref
// does, and K-quant super-blocks dotted with them in integers. Within a
// super-block everything is an exact integer (scaled sub-block dots and the
// min correction); the float work is two products per super-block, summed
// in order, so the kernels and the Go loops agree bit for bit.

const qkK = 256

// q8KActs holds n tokens' activations as q8_K blocks: token t's values at
// qs[t*cols:], scales at d[t*cols/256:], 16-value sums at bs[t*cols/16:].
type q8KActs struct {
	cols int
	qs   []int8
	d    []float32
	bs   []int16
	nsum []int32 // minus each 32 values' sum (IQ4_XS's row kernel)
	// split: qs split for iq4xsRows8AVX2 (splitQ8AVX2), two bytes a value;
	// wide: as little-endian words for iq4xsRows8AVX2W (widenQ8AVX2).
	split, wide []int8
}

// quantize fills a from n rows of x (cols a multiple of 256): the value of
// largest magnitude maps to -127, others round half to even (ggml's
// nearest_int), clamped at 127.
func (a *q8KActs) quantize(x []float32, n, cols int) {
	a.size(n, cols)
	a.blocks(x, 0, len(a.d))
}

// size shapes a for n rows of cols.
func (a *q8KActs) size(n, cols int) {
	a.cols = cols
	if cap(a.qs) < n*cols {
		a.qs, a.d, a.bs = make([]int8, n*cols), make([]float32, n*cols/qkK), make([]int16, n*cols/16)
		a.nsum = make([]int32, n*cols/32)
	}
	a.qs, a.d, a.bs, a.nsum = a.qs[:n*cols], a.d[:n*cols/qkK], a.bs[:n*cols/16], a.nsum[:n*cols/32]
}

// blocks quantizes x's super-blocks lo..hi into a (sized).
func (a *q8KActs) blocks(x []float32, lo, hi int) {
	if hi <= lo {
		return
	}
	v := q8KActs{qs: a.qs[lo*qkK : hi*qkK], d: a.d[lo:hi], bs: a.bs[lo*16 : hi*16], nsum: a.nsum[lo*8 : hi*8]}
	x = x[lo*qkK : hi*qkK]
	if haveSIMD {
		quantizeQ8KAVX2(&x[0], hi-lo, &v.qs[0], &v.d[0], &v.bs[0], &v.nsum[0])
		return
	}
	quantizeQ8KGo(&v, x)
}

// quantizeQ8KGo is quantize's loop over a's blocks, already sized.
func quantizeQ8KGo(a *q8KActs, x []float32) {
	for b := range a.d {
		v, q := x[b*qkK:(b+1)*qkK], a.qs[b*qkK:(b+1)*qkK]
		var amax, mx float32
		for _, f := range v {
			if ax := float32(math.Abs(float64(f))); ax > amax {
				amax, mx = ax, f
			}
		}
		if amax == 0 {
			a.d[b] = 0
			clear(q)
			clear(a.bs[b*16 : (b+1)*16])
			clear(a.nsum[b*8 : (b+1)*8])
			continue
		}
		iscale := -127 / mx
		for i, f := range v {
			q[i] = int8(min(127, math.RoundToEven(float64(iscale*f))))
		}
		for j := range 16 {
			var s int16
			for _, e := range q[16*j : 16*j+16] {
				s += int16(e)
			}
			a.bs[b*16+j] = s
		}
		for j := range 8 {
			a.nsum[b*8+j] = -(int32(a.bs[b*16+2*j]) + int32(a.bs[b*16+2*j+1]))
		}
		a.d[b] = 1 / iscale
	}
}

// dotQ6KGo is the Q6_K x q8_K dot of one row and one token: sixteen
// sub-blocks of 16 with int8 scales; the 6-bit values are unsigned, their
// offset of 32 is taken off through the activations' 16-sums.
func dotQ6KGo(w []byte, qs []int8, d []float32, bs []int16, nsb int) float32 {
	var acc float32
	for b := range nsb {
		blk, x := w[b*210:(b+1)*210], qs[b*qkK:(b+1)*qkK]
		var s, c int32
		for h := range 2 {
			ql, qh := blk[64*h:], blk[128+32*h:]
			for l := range 32 {
				u := [4]int32{
					int32(ql[l]&0xF | (qh[l]&3)<<4),
					int32(ql[l+32]&0xF | (qh[l]>>2&3)<<4),
					int32(ql[l]>>4 | (qh[l]>>4&3)<<4),
					int32(ql[l+32]>>4 | (qh[l]>>6&3)<<4),
				}
				for g, v := range u {
					e := 128*h + 32*g + l
					s += int32(int8(blk[192+e/16])) * v * int32(x[e])
				}
			}
		}
		for j := range 16 {
			c += int32(int8(blk[192+j])) * int32(bs[b*16+j])
		}
		dd := d[b] * quant.F16ToF32(uint16(blk[208])|uint16(blk[209])<<8)
		acc = acc + float32(dd*float32(s-32*c))
	}
	return acc
}
