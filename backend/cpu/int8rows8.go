package cpu

import (
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// The row form of Q4_K, Q5_K and Q6_K on AVX2 without VNNI
// (q4kRows8AVX2, q5kRows8AVX2, q6kRows8AVX2; IQ4_XS's iq4xsRows8AVXVNNI
// with AVX-VNNI): eight rows a call, each in a dword lane, from a copy
// packed at load so the kernel reads a dword of every row with one load
// and transposes nothing. Its float work per token and super-block is a
// few products and adds for eight rows, where the lane kernels they
// replace spent 24 lanes' for one; its result is dotQ4KRowGo's or
// dotQ5KRowGo's (as the VNNI row kernels'), dotQ6KGo's or dotIQ4XSGo's.

// packQ4K8 writes rows [8g, 8g+8) of src (Q4_K, rb bytes a row) packed into
// dst: per super-block the rows' head dwords (d and dmin, then scale bytes
// 0-3, 4-7 and 8-11) at 32k+4j for row j, then dword c of the 128 nibble
// bytes at 128+32c+4j: the group's eight super-blocks again.
func packQ4K8(dst, src []byte, rb, g int) {
	packDwords8(dst, src, rb, g, 144, [2]int{0, 4}, [2]int{16, 32})
}

// packQ5K8 is packQ4K8 for Q5_K: the same head and nibble dwords, then
// qh's dwords c at 1152+32c+4j.
func packQ5K8(dst, src []byte, rb, g int) {
	packDwords8(dst, src, rb, g, 176, [2]int{0, 4}, [2]int{48, 32}, [2]int{16, 8})
}

// packQ6K8 is packQ4K8 for Q6_K: per super-block the rows' scale dwords
// k at 32k+4j, ql's dwords c at 128+32c+4j, qh's at 1152+32c+4j, then
// the rows' d at 1664+2j.
func packQ6K8(dst, src []byte, rb, g int) {
	packDwords8(dst, src, rb, g, 210, [2]int{192, 4}, [2]int{0, 32}, [2]int{128, 16})
	for b := range rb / 210 {
		for j := range 8 {
			copy(dst[8*210*b+1664+2*j:][:2], src[(8*g+j)*rb+210*b+208:])
		}
	}
}

// packIQ4XS8 is packQ4K8 for IQ4_XS: per super-block the rows' head dwords
// (d and scales_h, then scales_l) at 32k+4j, then the nibbles' dwords c
// at 64+32c+4j.
func packIQ4XS8(dst, src []byte, rb, g int) {
	packDwords8(dst, src, rb, g, 136, [2]int{0, 2}, [2]int{8, 32})
}

// packDwords8 writes rows [8g, 8g+8) of src (super-blocks of size bytes)
// into dst as dword vectors, per super-block: for each run {off, n} in
// order, dword c of the n at off in row j's super-block to vector c's
// lane j.
func packDwords8(dst, src []byte, rb, g, size int, runs ...[2]int) {
	for b := range rb / size {
		out := dst[8*size*b : 8*size*(b+1)]
		for j := range 8 {
			blk := src[(8*g+j)*rb+size*b:][:size]
			v := 0
			for _, r := range runs {
				for c := range r[1] {
					copy(out[32*v+4*j:][:4], blk[r[0]+4*c:])
					v++
				}
			}
		}
	}
}

// rows8Kernel is an eight-row AVX2 kernel on packed groups: ntok tokens'
// q8_K activations (qstride apart, their 16-sums and scales after), its
// scratch scr, results ostride apart.
type rows8Kernel func(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)

// rows8Formats are the formats with eight-row AVX2 kernels: each one's
// packer, kernel, scratch before its tokens' sums (eight floats a token)
// in floats, whether the kernel needs AVX-VNNI (the format's first entry
// then; the next is the one without), whether it takes the activations
// split (actQ8_KS), and a kernel for passes of many tokens, if any.
var rows8Formats = []struct {
	t       quant.DType
	pack    func(dst, src []byte, rb, g int)
	kern    rows8Kernel
	scratch int
	avxvnni bool
	split   bool
	many    rows8Many
}{{quant.Q4_K, packQ4K8, q4kRows8AVX2, 576 / 4, false, false, rows8Many{}},
	{quant.Q5_K, packQ5K8, q5kRows8AVX2, 2624 / 4, false, false, rows8Many{}},
	{quant.Q6_K, packQ6K8, q6kRows8AVX2, 2848 / 4, false, false, rows8Many{}},
	{quant.IQ4_XS, packIQ4XS8, iq4xsRows8AVXVNNI, 3008 / 4, true, false, rows8Many{iq4xsRows16AVXVNNI, 5856 / 4, 16, rows16Tokens, false}},
	{quant.IQ4_XS, packIQ4XS8, iq4xsRows8AVX2, 3008 / 4, false, true, rows8Many{iq4xsRows8AVX2W, 4928 / 4, 8, 4, true}}}

// rows8Many is a format's kernel for passes of at least tokens tokens, on
// whole runs of rows rows (8, or 16: two adjacent groups): its scratch
// before the tokens' sums (rows floats a token), and whether it takes the
// activations as words (actQ8_KS's wide).
type rows8Many struct {
	kern          rows8Kernel
	scratch, rows int
	tokens        int
	wide          bool
}

// rows16Tokens is the fewest tokens a pass gives a sixteen-row kernel:
// with fewer, decoding two groups' values a super-block for so few tokens
// left it no faster than the eight-row one (IQ4_XS, 4 and 8 sequences).
const rows16Tokens = 16

// matmulRows8 is matmulInt8 for a format of rows8Formats (f) on AVX2
// without VNNI, on w's packed copy p: groups of eight rows aligned to the
// matrix (a share's first and last may reach outside [lo, hi): computed
// whole, only its own rows kept; whole runs by the format's many-token
// kernel where a pass has the tokens for it), tokens in passes of up to
// rowsTokens, each pass over all the groups so its activations stay in
// cache while the weights stream; rows past the last group by the
// format's Go loop (packing copies them as they are).
func (kn *kernels) matmulRows8(out []float32, a *acts, n int, w *model.Matrix, p []byte, lo, hi int, scratch []float32, f int) {
	cols, rows, rb := w.Cols, w.Rows, w.Type.RowBytes(w.Cols)
	e := &rows8Formats[f]
	nsb, whole, kern := cols/qkK, rows&^7, e.kern
	pass := min(n, rowsTokens)
	scr, res := scratch[:e.scratch+8*pass], scratch[e.scratch+8*pass:e.scratch+16*pass]
	mscr := scratch
	if e.many.kern != nil {
		mscr = scratch[:e.many.scratch+e.many.rows*pass]
	}
	chunk := 16 * max(1, rows8Chunk/(16*rb))
	for c0 := lo &^ 7; c0 < min(hi, whole); c0 += chunk {
		c1 := min(c0+chunk, hi, whole)
		for t := 0; t < n; t += pass {
			k := min(pass, n-t)
			qs, bs, d := &a.q8k.qs[t*cols], &a.q8k.bs[t*cols/16], &a.q8k.d[t*nsb]
			stride := cols
			if e.split {
				qs, stride = &a.q8k.split[2*t*cols], 2*cols
			}
			many, mqs, mstride := e.many.kern, qs, stride
			if k < e.many.tokens {
				many = nil
			} else if e.many.wide {
				mqs, mstride = &a.q8k.wide[2*t*cols], 2*cols
			}
			for g := c0; g < c1; g += 8 {
				if many != nil && g >= lo && g+e.many.rows <= c1 {
					many(&p[g*rb], mqs, bs, d, mstride, nsb, k, &mscr[0], &out[t*rows+g], rows)
					g += e.many.rows - 8
					continue
				}
				if g >= lo && g+8 <= hi {
					kern(&p[g*rb], qs, bs, d, stride, nsb, k, &scr[0], &out[t*rows+g], rows)
					continue
				}
				kern(&p[g*rb], qs, bs, d, stride, nsb, k, &scr[0], &res[0], 8)
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

// rows8Chunk is groupChunk for the AVX2 kernels' eight-row groups: half
// the L2 (256 KiB on a Zen 2/3). Where a thread's share of a matrix fits
// the L2 it is one chunk, each pass sweeping it all as before.
var rows8Chunk = groupChunk // a variable for tests

// rows8Format is t's index in rows8Formats, or -1 where it has none or
// its kernel needs AVX-VNNI these kernels leave out.
func (kn *kernels) rows8Format(t quant.DType) int {
	for i, f := range rows8Formats {
		if f.t == t && (kn.avxvnni || !f.avxvnni) {
			return i
		}
	}
	return -1
}
