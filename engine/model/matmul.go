package model

import "fmt"

// useSIMD selects the assembly kernels; it starts as what the CPU supports
// and tests turn it off to check the two paths against each other.
var useSIMD = haveSIMD

// floatKernels is one family of float-weight kernels: every member sums a
// (row, token) pair in the same order, so one family must serve a process.
type floatKernels struct {
	name   string
	width  int // the chunk the kernels consume; columns past the last chunk are summed in Go
	d24F32 func(w *float32, wstride int, x *float32, xstride, n int, out *float32)
	d1F32  func(w, x *float32, n int) float32
	d24F16 func(w *uint16, wstride int, x *float32, xstride, n int, out *float32)
	d1F16  func(w *uint16, x *float32, n int) float32
}

var (
	avx2Float   = floatKernels{"avx2", 8, dot2x4F32AVX2, dot1F32AVX2, dot2x4F16AVX2, dot1F16AVX2}
	avx512Float = floatKernels{"avx512", 16, dot2x4F32AVX512, dot1F32AVX512, dot2x4F16AVX512, dot1F16AVX512}
)

// fk is the float family in use: AVX-512 where the CPU has it.
var fk = func() floatKernels {
	if haveAVX512 {
		return avx512Float
	}
	return avx2Float
}()

// UseFloatKernels picks the float kernel family by name ("avx2", "avx512"),
// for side-by-side benchmarks. Call it before any backend runs.
func UseFloatKernels(name string) error {
	switch {
	case name == "avx2" && haveSIMD:
		fk = avx2Float
	case name == "avx512" && haveAVX512:
		fk = avx512Float
	default:
		return fmt.Errorf("kernel family %q is not available on this CPU", name)
	}
	return nil
}

// SIMD reports whether the assembly kernels are in use.
func SIMD() bool { return useSIMD }

// Kernels names the kernel families in use, for logs and benchmarks.
func Kernels() string {
	if !useSIMD {
		return "pure-go"
	}
	return fk.name + "-float+avx2-q8"
}

// tokenBlock bounds how many activation rows one pass over the weights
// serves, so that a long prefill's activations stay in L2 while rows stream.
const tokenBlock = 64

// vdot is dotF32 on the fastest path available.
func vdot(a, b []float32) float32 {
	n := len(a) &^ 31
	if !useSIMD || n == 0 {
		return dotF32(a, b)
	}
	b = b[:len(a)]
	s := dotF32AVX2(&a[0], &b[0], n)
	for i := n; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

// vaxpy computes y += a*x.
func vaxpy(a float32, x, y []float32) {
	n := len(x) &^ 15
	y = y[:len(x)]
	if useSIMD && n > 0 {
		axpyF32AVX2(a, &x[0], &y[0], n)
	} else {
		n = 0
	}
	for i := n; i < len(x); i++ {
		y[i] += a * x[i]
	}
}

// matmulRowsFast is matmulRows on the SIMD kernels, over blocks of
// tokenBlock tokens: float weights in tiles of two rows by four tokens (one
// row by four tokens for Q8_0), leftovers a row and a token at a time. Every
// kernel sums a (row, token) pair in the same order, so a token's output is
// bit-identical whatever else is in the batch.
func matmulRowsFast(out, x []float32, xq []byte, n int, w *Matrix, lo, hi int) {
	for tb := 0; tb < n; tb += tokenBlock {
		te := min(tb+tokenBlock, n)
		if w.Type == Q8_0 {
			matmulQ8(out, xq, w, lo, hi, tb, te)
		} else {
			matmulFloat(out, x, w, lo, hi, tb, te)
		}
	}
}

func matmulFloat(out, x []float32, w *Matrix, lo, hi, tb, te int) {
	cols, rows := w.Cols, w.Rows
	k := fk
	main := cols &^ (k.width - 1)
	f16 := w.Type == F16
	// tail adds the columns past the last full 8-wide chunk, in order.
	tail := func(s float32, r, t int) float32 {
		xt := x[t*cols : (t+1)*cols]
		if f16 {
			row := w.f16[r*cols : (r+1)*cols]
			for i := main; i < cols; i++ {
				s += f16Table[row[i]] * xt[i]
			}
			return s
		}
		row := w.f32[r*cols : (r+1)*cols]
		for i := main; i < cols; i++ {
			s += row[i] * xt[i]
		}
		return s
	}
	one := func(r, t int) float32 {
		var s float32
		if main > 0 {
			if f16 {
				s = k.d1F16(&w.f16[r*cols], &x[t*cols], main)
			} else {
				s = k.d1F32(&w.f32[r*cols], &x[t*cols], main)
			}
		}
		return tail(s, r, t)
	}
	var res [8]float32
	t := tb
	for ; t+4 <= te && main > 0; t += 4 {
		r := lo
		for ; r+2 <= hi; r += 2 {
			if f16 {
				k.d24F16(&w.f16[r*cols], cols, &x[t*cols], cols, main, &res[0])
			} else {
				k.d24F32(&w.f32[r*cols], cols, &x[t*cols], cols, main, &res[0])
			}
			for k := range 4 {
				out[(t+k)*rows+r] = tail(res[k], r, t+k)
				out[(t+k)*rows+r+1] = tail(res[4+k], r+1, t+k)
			}
		}
		for ; r < hi; r++ {
			for k := range 4 {
				out[(t+k)*rows+r] = one(r, t+k)
			}
		}
	}
	// Leftover tokens (all of a batch-1 decode) walk the rows one at a time:
	// one stream at a time is what the hardware prefetcher serves fastest.
	for ; t < te; t++ {
		for r := lo; r < hi; r++ {
			out[t*rows+r] = one(r, t)
		}
	}
}

func matmulQ8(out []float32, xq []byte, w *Matrix, lo, hi, tb, te int) {
	cols, rows := w.Cols, w.Rows
	rb, xb := Q8_0.RowBytes(cols), actRowBytes(cols)
	nb := cols / Q8Block
	var four [4]float32
	for r := lo; r < hi; r++ {
		row := w.Data[r*rb : (r+1)*rb]
		t := tb
		for ; t+4 <= te; t += 4 {
			dot4Q8AVX2(&row[0], &xq[t*xb], xb, nb, &four[0])
			out[t*rows+r], out[(t+1)*rows+r] = four[0], four[1]
			out[(t+2)*rows+r], out[(t+3)*rows+r] = four[2], four[3]
		}
		for ; t < te; t++ {
			out[t*rows+r] = dotQ8AVX2(&row[0], &xq[t*xb], nb)
		}
	}
}
