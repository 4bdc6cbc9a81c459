package cpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// floatKernels is one family of float-weight kernels: every member sums a
// (row, token) pair in the same order, so one family must serve a process.
type floatKernels struct {
	name   string
	width  int                                                                     // the chunk the kernels consume; columns past the last chunk are summed in Go
	d6F32  func(w *float32, wstride int, x *float32, xstride, n int, out *float32) // d6Rows rows, six tokens (out[d6Rows*t+r]); nil: none
	d6Rows int
	d44F32 func(w *float32, wstride int, x *float32, xstride, n int, out *float32) // nil: tiles of 2x4
	d24F32 func(w *float32, wstride int, x *float32, xstride, n int, out *float32)
	d1F32  func(w, x *float32, n int) float32
	d24F16 func(w *uint16, wstride int, x *float32, xstride, n int, out *float32)
	d1F16  func(w *uint16, x *float32, n int) float32
	d1BF16 func(w *uint16, x *float32, n int) float32 // d1F32 on bfloat16 rows widened in registers
	// Fused Q8_0 kernels in d1F32's order, for small batches.
	q8d1  func(w *byte, x *float32, nblocks int) float32
	q8d4  func(w *byte, x *float32, xstride, nblocks int, out *float32)     // a row, four tokens
	q8d4r func(w *byte, wstride int, x *float32, nblocks int, out *float32) // four rows, a token; nil: none
}

var (
	avx2Float = floatKernels{"avx2", 8, dot2x6F32AVX2, 2, nil, dot2x4F32AVX2, dot1F32AVX2, dot2x4F16AVX2, dot1F16AVX2,
		dot1BF16AVX2, dot1Q8F32AVX2, dot4Q8F32AVX2, dot4rQ8F32AVX2}
	avx512Float = floatKernels{"avx512", 16, dot4x6F32AVX512, 4, dot4x4F32AVX512, dot2x4F32AVX512, dot1F32AVX512, dot2x4F16AVX512,
		dot1F16AVX512, dot1BF16AVX512, dot1Q8F32AVX512, dot4Q8F32AVX512, dot4rQ8F32AVX512}
)

// kernels is the kernel set one backend runs: the SIMD ones (one float
// family, whose members sum in the same order) or the pure-Go loops. It is
// a field of the backend, chosen at New, so backends with different
// kernels (tests, side-by-side benchmarks) can run in one process.
type kernels struct {
	simd    bool
	f       floatKernels
	dequant func(src *byte, dst *float32, nblocks int) // Q8_0 rows, the widest family's
	int8    bool                                       // QuantDot "int8" or "auto": formats with int8 kernels (int8Kind) take the int8 path
	auto    bool                                       // QuantDot "auto": only generated tokens take it
	vnni    bool                                       // its VNNI kernels run (else its Go loops)
	avxvnni bool                                       // AVX2 family on a CPU with AVX-VNNI: Q8_0 on q80Rows8AVXVNNI
	amx     bool                                       // AMX-INT8 kernels take the formats they have (amxKernel) at amxTokens or more
	attn4   *attn4Kernels                              // the four-query attention kernels, nil: none
}

// attn4Kernels are a family's four-query attention kernels (attention.go's
// four): F16 scores and weighted sums of four queries at once.
type attn4Kernels struct {
	dots  func(q *float32, qstride int, k *uint16, kstride, hd, n int, out *float32, ostride int)
	accum func(p *float32, pstride int, v *uint16, vstride, hd, n int, out *float32, ostride int)
}

var (
	avx2Attn4   = &attn4Kernels{attnDots4F16AVX2, attnAccum4F16AVX2}
	avx512Attn4 = &attn4Kernels{attnDots4F16AVX512, attnAccum4F16AVX512}
)

// chooseKernels picks a kernel set by name: "" the best this CPU runs,
// "amx" (AVX-512 with the AMX-INT8 kernels), "avx512" (without them),
// "avxvnni" (AVX2 with AVX-VNNI, as on Alder Lake), "avx2" (without it, as
// on Zen 3), or "go" (the pure-Go loops, also where there is no SIMD).
func chooseKernels(name string) (*kernels, error) {
	k := &kernels{simd: haveSIMD, f: avx2Float, dequant: dequantQ8AVX2}
	if haveAVX512 {
		k.f, k.dequant = avx512Float, dequantQ8AVX512
	}
	switch {
	case name == "":
	case name == "go":
		k.simd = false
	case name == "avx2" && haveSIMD, name == "avxvnni" && haveAVXVNNI:
		k.f, k.dequant = avx2Float, dequantQ8AVX2
	case name == "avx512" && haveAVX512, name == "amx" && haveAMX:
		k.f = avx512Float
	default:
		return nil, fmt.Errorf("cpu backend: kernel family %q is not available on this CPU (have: %s)", name, available())
	}
	if !haveSIMD {
		k.simd = false
	}
	k.vnni = k.simd && haveVNNI && k.f.name == "avx512"
	k.amx = k.vnni && haveAMX && name != "avx512"
	k.avxvnni = k.simd && haveAVXVNNI && k.f.name == "avx2" && name != "avx2"
	switch {
	case k.simd && k.f.name == "avx512":
		k.attn4 = avx512Attn4
	case k.simd:
		k.attn4 = avx2Attn4
	}
	return k, nil
}

func available() string {
	switch {
	case haveAMX:
		return "amx, avx512, avx2, go"
	case haveAVX512:
		return "avx512, avx2, go"
	case haveAVXVNNI:
		return "avxvnni, avx2, go"
	case haveSIMD:
		return "avx2, go"
	}
	return "go"
}

// name describes the kernels, for logs and benchmarks.
func (kn *kernels) name() string {
	int8 := ""
	if kn.int8 {
		switch {
		case kn.amx:
			int8 = "+int8-vnni-amx"
		case kn.vnni:
			int8 = "+int8-vnni"
		case kn.avxvnni:
			int8 = "+int8-avxvnni"
		case kn.simd:
			int8 = "+int8-avx2"
		default:
			int8 = "+int8-go"
		}
		if kn.auto {
			int8 += "-decode"
		}
	}
	if !kn.simd {
		return "pure-go" + int8
	}
	return kn.f.name + "-float+dequant-q8" + int8
}

// Describe names the kernels in use, for logs (backends.Describe).
func (b *Backend) Describe() string { return "cpu " + b.kern.name() }

// Kernels names the backend's kernel set.
func (b *Backend) Kernels() string { return b.kern.name() }

var _ backend.RoleAware = (*Backend)(nil)

// ByRole reports whether prompt and generated tokens take different paths
// (QuantDot "auto").
func (b *Backend) ByRole() bool { return b.kern.auto }

// tokenBlock bounds how many activation rows one pass over the weights
// serves, so that a long prefill's activations stay in L2 while rows stream.
// Each block dequantizes the rows again: 128 halves that cost against 64
// (Q4_K_M L110 pp512, 5 interleaved runs: median 600 against 525 tok/s).
const tokenBlock = 128

// vdot is dotF32 on the fastest path available.
func (kn *kernels) vdot(a, b []float32) float32 {
	n := len(a) &^ 31
	if !kn.simd || n == 0 {
		return dotF32(a, b)
	}
	b = b[:len(a)]
	s := dotF32AVX2(&a[0], &b[0], n)
	for i := n; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

// scratchRows returns how many weight rows of cols columns a share
// dequantizes at a time: a multiple of 4 that keeps them within about 128
// KiB (L2), so they stay in cache while every token of a block uses them.
func scratchRows(cols int) int {
	return max(4, min(16, (128<<10)/(4*max(cols, 1)))&^3)
}

// scratchLen is the scratch a share needs for matrices of up to cols
// columns: the dequantized rows, then four token rows for padding.
func scratchLen(cols int) int { return (scratchRows(cols)+4)*cols + resLen }

// resLen floats at the end of a share's scratch take a kernel's results: a
// local array would escape to the heap (the kernels are called through
// function values) and allocate on every call.
const resLen = 24

// matmulRowsFast is matmulRows on the SIMD kernels, over blocks of
// tokenBlock tokens and scratchRows rows: float weights in tiles of four (or
// two) rows by four tokens. Q8_0 rows are dequantized into scratch first
// (exactly: an int8 times an fp16 scale fits a float32) and then run as
// float32 rows, in groups of six tokens (then four). The 1-3 tokens left after the groups are copied
// into a group padded with copies of the last, rather than run a token at a
// time. Every kernel sums a (row, token) pair in the same order, so a
// token's output is bit-identical whatever else is in the batch.
func (kn *kernels) matmulRowsFast(out, x []float32, n int, w *model.Matrix, lo, hi int, scratch []float32) {
	cols := w.Cols
	rb := scratchRows(cols)
	res := scratch[len(scratch)-resLen:]
	if w.Type == quant.Q8_0 && n < fusedQ8Below {
		kn.fusedQ8(out, x, n, w, lo, hi, res)
		return
	}
	if w.Type == quant.BF16 && n < 4 {
		kn.fusedBF16(out, x, n, w, lo, hi)
		return
	}
	ws, pad := scratch[:rb*cols], scratch[rb*cols:(rb+4)*cols]
	for tb := 0; tb < n; tb += tokenBlock {
		te := min(tb+tokenBlock, n)
		tm := te
		if w.Type != quant.F16 && kn.f.d44F32 != nil && cols%kn.f.width == 0 && te-tb > 4 && (te-tb)%4 != 0 {
			tm = te - (te-tb)%4
			for j := range 4 {
				src := min(tm+j, te-1)
				copy(pad[j*cols:(j+1)*cols], x[src*cols:(src+1)*cols])
			}
		}
		for r0 := lo; r0 < hi; r0 += rb {
			r1 := min(r0+rb, hi)
			var wr []float32
			switch w.Type {
			case quant.Q8_0:
				bytes := quant.Q8_0.RowBytes(cols)
				wr = ws[:(r1-r0)*cols]
				kn.dequant(&w.Data[r0*bytes], &wr[0], (r1-r0)*cols/quant.Q8Block)
			case quant.F32:
				wr = w.F32()[r0*cols : r1*cols]
			case quant.F16:
				kn.tileF16(out, x, w, r0, r1, tb, te, res)
				continue
			default: // SIMD dequantization where there is one, else the table's; both exact
				bytes := w.Type.RowBytes(cols)
				wr = ws[:(r1-r0)*cols]
				deq := simdDequant(w.Type)
				if deq == nil {
					deq = quant.Lookup(w.Type).Dequantize
				}
				deq(w.Data[r0*bytes:r1*bytes], wr)
			}
			kn.tileF32(out[tb*w.Rows:], x[tb*cols:], tm-tb, tm-tb, wr, w.Rows, cols, r0, r1, res)
			if tm < te {
				kn.tileF32(out[tm*w.Rows:], pad, 4, te-tm, wr, w.Rows, cols, r0, r1, res)
			}
		}
	}
}

// fusedBF16 is matmulRowsFast for BF16 weights and one to three tokens:
// each row widened in registers and dotted in d1F32's order, the sum the
// tiles give on the dequantized row (the same row read once, not written
// to scratch and read again).
func (kn *kernels) fusedBF16(out, x []float32, n int, w *model.Matrix, lo, hi int) {
	cols, rows := w.Cols, w.Rows
	main := cols &^ (kn.f.width - 1)
	for r := lo; r < hi; r++ {
		row := unsafe.Slice((*uint16)(unsafe.Pointer(&w.Data[2*r*cols])), cols)
		for t := range n {
			xt := x[t*cols : (t+1)*cols]
			var s float32
			if main > 0 {
				s = kn.f.d1BF16(&row[0], &xt[0], main)
			}
			for i := main; i < cols; i++ { // the columns past the last full chunk, in order
				s += math.Float32frombits(uint32(row[i])<<16) * xt[i]
			}
			out[t*rows+r] = s
		}
	}
}

// fusedQ8Below is the batch below which Q8_0 rows are dequantized in
// registers rather than into scratch: a small batch cannot repay the extra
// pass over memory that the scratch costs.
const fusedQ8Below = 8

// fusedQ8 is matmulRowsFast for Q8_0 weights and a small batch, four rows
// at a time (held in cache meanwhile): each row against the groups of four
// tokens, then the four rows against each token left over.
func (kn *kernels) fusedQ8(out, x []float32, n int, w *model.Matrix, lo, hi int, res []float32) {
	cols, rows, k := w.Cols, w.Rows, kn.f
	bytes, nb := quant.Q8_0.RowBytes(cols), cols/quant.Q8Block
	full := n &^ 3
	r := lo
	for ; r < hi; r += 4 {
		nr := min(4, hi-r)
		for i := range nr {
			row := w.Data[(r+i)*bytes : (r+i+1)*bytes]
			for t := 0; t < full; t += 4 {
				k.q8d4(&row[0], &x[t*cols], cols, nb, &res[0])
				for j := range 4 {
					out[(t+j)*rows+r+i] = res[j]
				}
			}
		}
		for t := full; t < n; t++ {
			if nr == 4 && k.q8d4r != nil {
				k.q8d4r(&w.Data[r*bytes], bytes, &x[t*cols], nb, &res[0])
				for i := range 4 {
					out[t*rows+r+i] = res[i]
				}
				continue
			}
			for i := range nr {
				out[t*rows+r+i] = k.q8d1(&w.Data[(r+i)*bytes], &x[t*cols], nb)
			}
		}
	}
}

// tileF32 computes tokens 0..n-1 of x against rows [r0, r1), whose weights
// ws holds (row r at (r-r0)*cols), and stores the first keep of them in out
// (token t, row r at out[t*rows+r]).
func (kn *kernels) tileF32(out, x []float32, n, keep int, ws []float32, rows, cols, r0, r1 int, res []float32) {
	k := kn.f
	main := cols &^ (k.width - 1)
	one := func(r, t int) float32 {
		row, xt := ws[(r-r0)*cols:(r-r0+1)*cols], x[t*cols:(t+1)*cols]
		var s float32
		if main > 0 {
			s = k.d1F32(&row[0], &xt[0], main)
		}
		for i := main; i < cols; i++ { // the columns past the last full chunk, in order
			s += row[i] * xt[i]
		}
		return s
	}
	t := 0
	if tr := k.d6Rows; k.d6F32 != nil && main == cols && r1-r0 >= tr {
		// Groups of six tokens: each row vector loaded feeds six FMAs, not
		// four. As many as leave a multiple of four when n is one, so that
		// no token falls to the one-pair path.
		six := n / 6
		if six > 0 && n%4 == 0 && (n-6*six)%4 != 0 {
			six--
		}
		for ; t < 6*six; t += 6 {
			m := min(6, keep-t)
			r := r0
			for ; r+tr <= r1; r += tr {
				k.d6F32(&ws[(r-r0)*cols], cols, &x[t*cols], cols, main, &res[0])
				for j := range m {
					for i := range tr {
						out[(t+j)*rows+r+i] = res[tr*j+i]
					}
				}
			}
			for ; r < r1; r++ {
				for j := range m {
					out[(t+j)*rows+r] = one(r, t+j)
				}
			}
		}
	}
	for ; t+4 <= n && main > 0 && main == cols; t += 4 {
		m := min(4, keep-t)
		r := r0
		if k.d44F32 != nil {
			for ; r+4 <= r1; r += 4 {
				k.d44F32(&ws[(r-r0)*cols], cols, &x[t*cols], cols, main, &res[0])
				for i := range 4 {
					for j := range m {
						out[(t+j)*rows+r+i] = res[4*i+j]
					}
				}
			}
		}
		for ; r+2 <= r1; r += 2 {
			k.d24F32(&ws[(r-r0)*cols], cols, &x[t*cols], cols, main, &res[0])
			for j := range m {
				out[(t+j)*rows+r] = res[j]
				out[(t+j)*rows+r+1] = res[4+j]
			}
		}
		for ; r < r1; r++ {
			for j := range m {
				out[(t+j)*rows+r] = one(r, t+j)
			}
		}
	}
	// Leftover tokens (all of a batch-1 decode) walk the rows one at a time,
	// as do matrices whose width is not a multiple of the chunk (tiny models).
	for ; t < keep; t++ {
		for r := r0; r < r1; r++ {
			out[t*rows+r] = one(r, t)
		}
	}
}

// tileF16 is tileF32 for F16 weights, read in place.
func (kn *kernels) tileF16(out, x []float32, w *model.Matrix, r0, r1, tb, te int, res []float32) {
	cols, rows := w.Cols, w.Rows
	k := kn.f
	main := cols &^ (k.width - 1)
	one := func(r, t int) float32 {
		row, xt := w.F16()[r*cols:(r+1)*cols], x[t*cols:(t+1)*cols]
		var s float32
		if main > 0 {
			s = k.d1F16(&row[0], &xt[0], main)
		}
		for i := main; i < cols; i++ {
			s += f16Table[row[i]] * xt[i]
		}
		return s
	}
	t := tb
	for ; t+4 <= te && main > 0 && main == cols; t += 4 {
		r := r0
		for ; r+2 <= r1; r += 2 {
			k.d24F16(&w.F16()[r*cols], cols, &x[t*cols], cols, main, &res[0])
			for j := range 4 {
				out[(t+j)*rows+r] = res[j]
				out[(t+j)*rows+r+1] = res[4+j]
			}
		}
		for ; r < r1; r++ {
			for j := range 4 {
				out[(t+j)*rows+r] = one(r, t+j)
			}
		}
	}
	for ; t < te; t++ {
		for r := r0; r < r1; r++ {
			out[t*rows+r] = one(r, t)
		}
	}
}
