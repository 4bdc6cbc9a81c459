//go:build !amd64 || purego

package model

// haveSIMD is false where there is no assembly: the pure-Go kernels run, and
// these are never called.
var haveSIMD = false

var haveAVX512 = false

func dot2x4F32AVX512(w *float32, wstride int, x *float32, xstride, n int, out *float32) {
	panic("no simd")
}
func dot1F32AVX512(w, x *float32, n int) float32 { panic("no simd") }
func dot2x4F16AVX512(w *uint16, wstride int, x *float32, xstride, n int, out *float32) {
	panic("no simd")
}
func dot1F16AVX512(w *uint16, x *float32, n int) float32 { panic("no simd") }

func dotF32AVX2(a, b *float32, n int) float32 { panic("no simd") }
func dot2x4F32AVX2(w *float32, wstride int, x *float32, xstride, n int, out *float32) {
	panic("no simd")
}
func dot1F32AVX2(w, x *float32, n int) float32 { panic("no simd") }
func dot2x4F16AVX2(w *uint16, wstride int, x *float32, xstride, n int, out *float32) {
	panic("no simd")
}
func dot1F16AVX2(w *uint16, x *float32, n int) float32          { panic("no simd") }
func dotQ8AVX2(w, x *byte, nblocks int) float32                 { panic("no simd") }
func dot4Q8AVX2(w, x *byte, xstride, nblocks int, out *float32) { panic("no simd") }
func axpyF32AVX2(a float32, x, y *float32, n int)               { panic("no simd") }
func fmaPeakAVX2(iters int)                                     { panic("no simd") }
