//go:build !purego

package model

import "golang.org/x/sys/cpu"

// haveSIMD reports whether this CPU runs the AVX2/FMA/F16C kernels.
var haveSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// haveAVX512 reports whether it also runs the AVX-512F float kernels.
var haveAVX512 = haveSIMD && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

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
func dot1F32AVX2(w, x *float32, n int) float32

//go:noescape
func dot2x4F16AVX2(w *uint16, wstride int, x *float32, xstride, n int, out *float32)

//go:noescape
func dot1F16AVX2(w *uint16, x *float32, n int) float32

//go:noescape
func dotQ8AVX2(w, x *byte, nblocks int) float32

//go:noescape
func dot4Q8AVX2(w, x *byte, xstride, nblocks int, out *float32)

//go:noescape
func axpyF32AVX2(a float32, x, y *float32, n int)

//go:noescape
func fmaPeakAVX2(iters int)
