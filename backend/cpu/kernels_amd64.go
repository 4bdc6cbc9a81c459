//go:build !purego

package cpu

import "golang.org/x/sys/cpu"

// haveSIMD reports whether this CPU runs the AVX2/FMA/F16C kernels.
var haveSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// haveAVX512 reports whether it also runs the AVX-512F float kernels (and
// so the VNNI ones). The build tag noavx512 masks AVX-512 (and AVX-VNNI)
// off, so that any machine runs every path a CPU with AVX2 only (AMD Zen
// 2/3) runs: make test runs the kernel, golden and exactness suites both
// ways.
var haveAVX512 = !maskAVX512 && haveSIMD && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

//go:noescape
func dot2x4F32AVX512(w *float32, wstride int, x *float32, xstride, n int, out *float32)

//go:noescape
func dot1F32AVX512(w, x *float32, n int) float32

//go:noescape
func dot2x4F16AVX512(w *uint16, wstride int, x *float32, xstride, n int, out *float32)

//go:noescape
func dot1F16AVX512(w *uint16, x *float32, n int) float32

//go:noescape
func dotF32AVX2(a, b *float32, n int) float32

//go:noescape
func dot2x4F32AVX2(w *float32, wstride int, x *float32, xstride, n int, out *float32)

//go:noescape
func dot2x6F32AVX2(w *float32, wstride int, x *float32, xstride, n int, out *float32)

//go:noescape
func dot1F32AVX2(w, x *float32, n int) float32

//go:noescape
func dot2x4F16AVX2(w *uint16, wstride int, x *float32, xstride, n int, out *float32)

//go:noescape
func dot1F16AVX2(w *uint16, x *float32, n int) float32

//go:noescape
func dot4x6F32AVX512(w *float32, wstride int, x *float32, xstride, n int, out *float32)

//go:noescape
func dot4x4F32AVX512(w *float32, wstride int, x *float32, xstride, n int, out *float32)

//go:noescape
func dequantQ8AVX2(src *byte, dst *float32, nblocks int)

//go:noescape
func fmaPeakAVX2(iters int)

//go:noescape
func int8PeakAVX2(form int, buf *byte, iters int)

//go:noescape
func attnDotsAVX2(q, k *float32, kstride, hd, n int, out *float32)

//go:noescape
func attnAccumAVX2(p, v *float32, vstride, hd, n int, out *float32)

//go:noescape
func attnDotsF16AVX2(q *float32, k *uint16, kstride, hd, n int, out *float32)

//go:noescape
func attnDots4F16AVX512(q *float32, qstride int, k *uint16, kstride, hd, n int, out *float32, ostride int)

//go:noescape
func attnAccum4F16AVX512(p *float32, pstride int, v *uint16, vstride, hd, n int, out *float32, ostride int)

//go:noescape
func attnAccumF16AVX2(p *float32, v *uint16, vstride, hd, n int, out *float32)

//go:noescape
func prefetchT0(p *byte, n int)

//go:noescape
func toF16AVX2(src *float32, dst *uint16, n int)

//go:noescape
func quantizeQ80AVX2(x *float32, nb int, qs *int8, d *float32, sums, nsum *int32)

//go:noescape
func geluAVX2(x, y *float32, n int, table *float32)

//go:noescape
func quantizeQ8KAVX2(x *float32, nb int, qs *int8, d *float32, bs *int16, nsum *int32)

//go:noescape
func dequantQ8AVX512(src *byte, dst *float32, nblocks int)

//go:noescape
func dot1Q8F32AVX512(w *byte, x *float32, nblocks int) float32

//go:noescape
func dot4Q8F32AVX512(w *byte, x *float32, xstride, nblocks int, out *float32)

//go:noescape
func expSumAVX2(x *float32, n int, sub, scale float32, c *float32) float32

//go:noescape
func swigluAVX2(h, h2 *float32, n int, c *float32)

// siluAVX2 is swigluAVX2's gate alone: h[i] = silu(h[i]).
//
//go:noescape
func siluAVX2(h *float32, n int, c *float32)

//go:noescape
func dot4rQ8F32AVX512(w *byte, wstride int, x *float32, nblocks int, out *float32)

//go:noescape
func dot1Q8F32AVX2(w *byte, x *float32, nblocks int) float32

//go:noescape
func dot4Q8F32AVX2(w *byte, x *float32, xstride, nblocks int, out *float32)

//go:noescape
func dot4rQ8F32AVX2(w *byte, wstride int, x *float32, nblocks int, out *float32)

//go:noescape
func q4kPairAVX2(q *byte, d1, m1, d2, m2 float32, y *float32)

//go:noescape
func q6kHalfAVX2(ql, qh *byte, sc *float32, y *float32)

//go:noescape
func q5kPairAVX2(ql, qh *byte, shift int, d1, m1, d2, m2 float32, y *float32)

//go:noescape
func q40BlocksAVX2(src *byte, dst *float32, nblocks int)

//go:noescape
func q41BlocksAVX2(src *byte, dst *float32, nblocks int)

//go:noescape
func q50BlocksAVX2(src *byte, dst *float32, nblocks int)

//go:noescape
func q51BlocksAVX2(src *byte, dst *float32, nblocks int)

//go:noescape
func gridRunAVX2(q *byte, qstride int, scales *float32, n int, y *float32, grid *int8)

//go:noescape
func bf16RunAVX2(src *byte, dst *float32, n int)

//go:noescape
func q2kAVX2(qs *byte, dl, ml *float32, y *float32)

//go:noescape
func q3kAVX2(qs, hm *byte, dl *float32, y *float32)

//go:noescape
func dot1BF16AVX512(w *uint16, x *float32, n int) float32

//go:noescape
func dot1BF16AVX2(w *uint16, x *float32, n int) float32

// deltaUpdateAVX2 updates one Gated DeltaNet head's state and gives its
// output (deltanet.go; deltanet_amd64.s).
//
//go:noescape
func deltaUpdateAVX2(m *float32, s int, k, q *float32, decay float32, d, o, next *float32)

// deltaUpdateAVX512 is deltaUpdateAVX2 sixteen floats a step, its bits.
//
//go:noescape
func deltaUpdateAVX512(m *float32, s int, k, q *float32, decay float32, d, o, next *float32)

//go:noescape
func ropeNeoXAVX2(v *float32, hd, heads int, cos, sin *float32, pairs int)

//go:noescape
func ropePairsAVX2(v *float32, hd, heads int, cos, sin *float32, pairs int)

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func attnDots4F16AVX2(q *float32, qstride int, k *uint16, kstride, hd, n int, out *float32, ostride int)

//go:noescape
func attnAccum4F16AVX2(p *float32, pstride int, v *uint16, vstride, hd, n int, out *float32, ostride int)
