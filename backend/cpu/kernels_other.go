//go:build !amd64 || purego

package cpu

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
func dot2x6F32AVX2(w *float32, wstride int, x *float32, xstride, n int, out *float32) {
	panic("no simd")
}
func dot1F32AVX2(w, x *float32, n int) float32 { panic("no simd") }
func dot2x4F16AVX2(w *uint16, wstride int, x *float32, xstride, n int, out *float32) {
	panic("no simd")
}
func dot1F16AVX2(w *uint16, x *float32, n int) float32 { panic("no simd") }
func dot4x6F32AVX512(w *float32, wstride int, x *float32, xstride, n int, out *float32) {
	panic("no simd")
}
func dot4x4F32AVX512(w *float32, wstride int, x *float32, xstride, n int, out *float32) {
	panic("no simd")
}
func dequantQ8AVX2(src *byte, dst *float32, nblocks int) { panic("no simd") }
func fmaPeakAVX2(iters int)                              { panic("no simd") }
func int8PeakAVX2(form int, buf *byte, iters int)        { panic("no simd") }

func attnDotsAVX2(q, k *float32, kstride, hd, n int, out *float32)  { panic("no simd") }
func attnAccumAVX2(p, v *float32, vstride, hd, n int, out *float32) { panic("no simd") }

func attnDotsF16AVX2(q *float32, k *uint16, kstride, hd, n int, out *float32)  { panic("no simd") }
func attnAccumF16AVX2(p *float32, v *uint16, vstride, hd, n int, out *float32) { panic("no simd") }
func attnDots4F16AVX512(q *float32, qstride int, k *uint16, kstride, hd, n int, out *float32, ostride int) {
	panic("no simd")
}
func attnAccum4F16AVX512(p *float32, pstride int, v *uint16, vstride, hd, n int, out *float32, ostride int) {
	panic("no simd")
}
func toF16AVX2(src *float32, dst *uint16, n int)               { panic("no simd") }
func prefetchT0(p *byte, n int)                                {}
func dequantQ8AVX512(src *byte, dst *float32, nblocks int)     { panic("no simd") }
func dot1Q8F32AVX512(w *byte, x *float32, nblocks int) float32 { panic("no simd") }
func dot4Q8F32AVX512(w *byte, x *float32, xstride, nblocks int, out *float32) {
	panic("no simd")
}
func expSumAVX2(x *float32, n int, sub, scale float32, c *float32) float32 { panic("no simd") }
func swigluAVX2(h, h2 *float32, n int, c *float32)                         { panic("no simd") }
func siluAVX2(h *float32, n int, c *float32)                               { panic("no simd") }
func dot4rQ8F32AVX512(w *byte, wstride int, x *float32, nblocks int, out *float32) {
	panic("no simd")
}
func dot1Q8F32AVX2(w *byte, x *float32, nblocks int) float32 { panic("no simd") }
func dot4Q8F32AVX2(w *byte, x *float32, xstride, nblocks int, out *float32) {
	panic("no simd")
}
func dot4rQ8F32AVX2(w *byte, wstride int, x *float32, nblocks int, out *float32) {
	panic("no simd")
}

func q4kPairAVX2(q *byte, d1, m1, d2, m2 float32, y *float32) { panic("no simd") }
func q6kHalfAVX2(ql, qh *byte, sc *float32, y *float32)       { panic("no simd") }

func q5kPairAVX2(ql, qh *byte, shift int, d1, m1, d2, m2 float32, y *float32) { panic("no simd") }
func q40BlocksAVX2(src *byte, dst *float32, nblocks int)                      { panic("no simd") }
func q41BlocksAVX2(src *byte, dst *float32, nblocks int)                      { panic("no simd") }
func q50BlocksAVX2(src *byte, dst *float32, nblocks int)                      { panic("no simd") }
func q51BlocksAVX2(src *byte, dst *float32, nblocks int)                      { panic("no simd") }
func gridRunAVX2(q *byte, qstride int, scales *float32, n int, y *float32, grid *int8) {
	panic("no simd")
}
func bf16RunAVX2(src *byte, dst *float32, n int)          { panic("no simd") }
func q2kAVX2(qs *byte, dl, ml *float32, y *float32)       { panic("no simd") }
func q3kAVX2(qs, hm *byte, dl *float32, y *float32)       { panic("no simd") }
func dot1BF16AVX512(w *uint16, x *float32, n int) float32 { panic("no simd") }
func dot1BF16AVX2(w *uint16, x *float32, n int) float32   { panic("no simd") }

func deltaUpdateAVX2(m *float32, s int, k, q *float32, decay float32, d, o, next *float32) {
	panic("no simd")
}
func deltaUpdateAVX512(m *float32, s int, k, q *float32, decay float32, d, o, next *float32) {
	panic("no simd")
}
func quantizeQ80AVX2(x *float32, nb int, qs *int8, d *float32, sums, nsum *int32) {
	panic("no simd")
}
func quantizeQ8KAVX2(x *float32, nb int, qs *int8, d *float32, bs *int16, nsum *int32) {
	panic("no simd")
}
func geluAVX2(x, y *float32, n int, table *float32)                         { panic("no simd") }
func ropeNeoXAVX2(v *float32, hd, heads int, cos, sin *float32, pairs int)  { panic("no simd") }
func ropePairsAVX2(v *float32, hd, heads int, cos, sin *float32, pairs int) { panic("no simd") }
func maxAVX2(x *float32, n int) float32                                     { panic("no simd") }
func attnDots4F16AVX2(q *float32, qstride int, k *uint16, kstride, hd, n int, out *float32, ostride int) {
	panic("no simd")
}
func attnAccum4F16AVX2(p *float32, pstride int, v *uint16, vstride, hd, n int, out *float32, ostride int) {
	panic("no simd")
}
