package cpu

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/quant"
)

// kvLayer is one layer's K or V store: float32, half floats, or one of
// ggml's 32-value block formats (backend.KVFormats). A block holds its KV
// heads one after another, each head's positions contiguous
// ((block*KVHeads + head)*blockSize + position)*HeadDim elements, so that
// attention, which runs per head, reads memory in sequence and not at a
// stride. In a block format a head's row of HeadDim values (a multiple of
// 32) is HeadDim/32 blocks: the bytes llama.cpp stores for them.
type kvLayer struct {
	f32  []float32
	f16  []uint16
	q    []byte      // a block format's blocks
	t    quant.DType // q's format
	bb   int         // q's bytes per 32 values
	rows int         // positions a block holds
	kern *kernels
}

// newKVLayer makes a store of n elements of t over mem, in blocks of rows
// positions.
func newKVLayer(t quant.DType, mem unsafe.Pointer, n, rows int, kern *kernels) kvLayer {
	switch t {
	case quant.F32:
		return kvLayer{f32: unsafe.Slice((*float32)(mem), n), t: t, rows: rows, kern: kern}
	case quant.F16:
		return kvLayer{f16: unsafe.Slice((*uint16)(mem), n), t: t, rows: rows, kern: kern}
	}
	return kvLayer{q: unsafe.Slice((*byte)(mem), t.RowBytes(n)), t: t, bb: t.RowBytes(32), rows: rows, kern: kern}
}

// bytes is the memory of the n elements at element offset off.
func (s kvLayer) bytes(off, n int) []byte {
	switch {
	case s.q != nil:
		return s.q[off/32*s.bb : (off+n)/32*s.bb]
	case s.f16 != nil:
		return unsafe.Slice((*byte)(unsafe.Pointer(&s.f16[off])), 2*n)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s.f32[off])), 4*n)
}

// put stores src at element offset off: a block format quantizes it as
// ggml's set_rows does on this CPU (Q8_0 as quantize_row_q8_0's x86 form,
// the others by their row reference quantizers).
func (s kvLayer) put(off int, src []float32) {
	switch {
	case s.q != nil:
		dst := s.bytes(off, len(src))
		switch s.t {
		case quant.Q8_0:
			quantizeQ8KV(src, dst)
		case quant.IQ4_NL:
			quant.QuantizeIQ4NLRowRef(src, dst)
		default:
			quant.Lookup(s.t).Quantize(src, dst)
		}
	case s.f16 == nil:
		copy(s.f32[off:off+len(src)], src)
	default:
		dst := s.f16[off : off+len(src)]
		n := 0
		if s.kern.simd {
			if n = len(src) &^ 7; n > 0 {
				toF16AVX2(&src[0], &dst[0], n)
			}
		}
		for i := n; i < len(src); i++ {
			dst[i] = quant.F32ToF16(src[i])
		}
	}
}

// quantizeQ8KV is ggml's quantize_row_q8_0 on x86: the scale amax/127
// stored as fp16, the values x*(127/amax) rounded to nearest even (its
// reference quantizer multiplies by 1/d and rounds half away from zero).
func quantizeQ8KV(src []float32, dst []byte) {
	for b := range len(src) / 32 {
		x, out := src[b*32:(b+1)*32], dst[b*34:(b+1)*34]
		amax := absMax(x)
		h := quant.F32ToF16(amax / 127)
		out[0], out[1] = byte(h), byte(h>>8)
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for i, v := range x {
			out[2+i] = byte(int8(roundEven(v * id)))
		}
	}
}

// prefetch hints the n elements at off into cache.
func (s kvLayer) prefetch(off, n int) {
	if s.kern.simd {
		m := s.bytes(off, n)
		prefetchT0(&m[0], len(m))
	}
}

// dots sets out[j] = q . row j for j < n, row j starting at off + j*stride:
// the attention scores of the positions of one KV block. A block format
// takes the query quantized (qa: ggml's q8_0, as its flash attention
// quantizes Q for K's dot) and dots it in integers (kdots).
func (s kvLayer) dots(q []float32, qa *q8Acts, off, stride, n int, out []float32) {
	hd := len(q)
	end := off + (n-1)*stride + hd
	out = out[:n]
	switch {
	case s.q != nil:
		s.kdots(qa, off, stride, n, out)
	case s.f16 == nil:
		k := s.f32[off:end]
		if s.kern.simd && hd%8 == 0 {
			attnDotsAVX2(&q[0], &k[0], stride, hd, n, &out[0])
			return
		}
		for j := range out {
			out[j] = dotF32(q, k[j*stride:j*stride+hd])
		}
	default:
		k := s.f16[off:end]
		if s.kern.simd && hd%8 == 0 {
			attnDotsF16AVX2(&q[0], &k[0], stride, hd, n, &out[0])
			return
		}
		for j := range out {
			out[j] = dotF16(k[j*stride:j*stride+hd], q)
		}
	}
}

// accum adds sum_j p[j] * row j to out, rows laid out as for dots. A block
// format's rows are dequantized (as ggml's flash attention dequantizes V's
// rows) and accumulated as float32: Q8_0's and Q4_0's in one kernel, the
// others through buf a KV block at a time.
func (s kvLayer) accum(p []float32, off, stride int, out, buf []float32) {
	hd, n := len(out), len(p)
	end := off + (n-1)*stride + hd
	switch {
	case s.q != nil && s.t == quant.Q8_0 && s.kern.simd:
		attnAccumQ8AVX2(&p[0], &s.q[off/32*s.bb], stride/32*s.bb, hd, n, &out[0])
	case s.q != nil && s.t == quant.Q4_0 && s.kern.simd:
		attnAccumQ4AVX2(&p[0], &s.q[off/32*s.bb], stride/32*s.bb, hd, n, &out[0])
	case s.q != nil:
		v := buf[:end-off]
		s.dequant(off, v)
		if s.kern.simd && hd%8 == 0 {
			attnAccumAVX2(&p[0], &v[0], stride, hd, n, &out[0])
			return
		}
		accumF32(p, v, stride, out)
	case s.f16 == nil:
		v := s.f32[off:end]
		if s.kern.simd && hd%8 == 0 {
			attnAccumAVX2(&p[0], &v[0], stride, hd, n, &out[0])
			return
		}
		accumF32(p, v, stride, out)
	default:
		v := s.f16[off:end]
		if s.kern.simd && hd%8 == 0 {
			attnAccumF16AVX2(&p[0], &v[0], stride, hd, n, &out[0])
			return
		}
		for j, pj := range p {
			row := v[j*stride : j*stride+hd]
			for i := range out {
				out[i] += pj * f16Table[row[i]]
			}
		}
	}
}

func accumF32(p, v []float32, stride int, out []float32) {
	for j, pj := range p {
		row := v[j*stride : j*stride+len(out)]
		for i := range out {
			out[i] += pj * row[i]
		}
	}
}

// dequant writes the len(dst) values at element offset off as floats,
// exactly as quant's dequantizers compute them.
func (s kvLayer) dequant(off int, dst []float32) {
	src := s.bytes(off, len(dst))
	if s.kern.simd {
		if s.t == quant.Q8_0 {
			s.kern.dequant(&src[0], &dst[0], len(dst)/32)
			return
		}
		if f := simdDequant(s.t); f != nil {
			f(src, dst)
			return
		}
	}
	quant.Lookup(s.t).Dequantize(src, dst)
}

// kdots is dots for a block format. With VNNI, sixteen rows at a time go
// through the format's row kernel (a group may reach past row n, never
// past the block's rows: it is computed whole, only its rows kept), the
// rest by rows32Go, which gives each row the kernel's bits; without VNNI
// each row goes through the format's AVX2 kernel, or its Go loop.
func (s kvLayer) kdots(qa *q8Acts, off, stride, n int, out []float32) {
	rb, nb := stride/32*s.bb, stride/32
	w := s.bytes(off, (n-1)*stride+stride)
	j := 0
	if kn := s.kern; kn.simd && kn.vnni {
		room := s.rows - off/stride%s.rows // rows left in the block
		kern := rowKernel(s.t)
		var acc [48]float32
		var res [16]float32
		for ; j < n && j+16 <= room; j += 16 {
			kern(&w[j*rb], rb, &qa.qs[0], &qa.d[0], &qa.nsum[0], 0, 0, nb, 1, &acc[0], &res[0], 16)
			copy(out[j:n], res[:])
		}
	}
	for ; j < n; j++ {
		out[j] = s.rowDot(w[j*rb:(j+1)*rb], qa, nb)
	}
}

// rowDot is one row's dot with the quantized query.
func (s kvLayer) rowDot(row []byte, qa *q8Acts, nb int) float32 {
	if s.kern.simd && !s.kern.vnni {
		switch s.t {
		case quant.Q8_0:
			return dotQ80AVX2(&row[0], &qa.qs[0], &qa.d[0], nb)
		case quant.Q4_0:
			return dotQ40AVX2(&row[0], &qa.qs[0], &qa.d[0], &qa.sums[0], nb)
		case quant.Q5_0:
			return dotQ50AVX2(&row[0], &qa.qs[0], &qa.d[0], nb)
		case quant.IQ4_NL:
			return dotIQ4NLAVX2(&row[0], &qa.qs[0], &qa.d[0], nb)
		}
	}
	return rows32Go(row, qa.qs, qa.d, nb, kvBlock32(s.t))
}

// kvBlock32 is t's description for rows32Go.
func kvBlock32(t quant.DType) *block32 {
	switch t {
	case quant.Q8_0:
		return &q80Row
	case quant.Q4_0:
		return &q40Row
	case quant.Q5_0:
		return &q50Int8
	}
	return &iq4nlInt8
}

// checkKV refuses K/V types the store cannot hold for heads of hd values.
func checkKV(kv backend.KVTypes, hd int) error {
	for _, t := range []quant.DType{kv.K, kv.V} {
		if !slices.Contains(backend.KVFormats, t) {
			return fmt.Errorf("cpu backend: KV cache type %v (want one of %s)", t, kvNames())
		}
		if t != quant.F32 && t != quant.F16 && hd%32 != 0 {
			return fmt.Errorf("cpu backend: KV cache type %s needs a head size that is a multiple of 32 (this model's is %d), as llama.cpp's does", strings.ToLower(t.String()), hd)
		}
	}
	return nil
}

func kvNames() string {
	var s []string
	for _, t := range backend.KVFormats {
		s = append(s, strings.ToLower(t.String()))
	}
	return strings.Join(s, ", ")
}
