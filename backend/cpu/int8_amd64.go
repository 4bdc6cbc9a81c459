//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// haveVNNI reports whether the int8 kernels run: AVX512-VNNI with AVX512VL
// (VPDPBUSD on 256-bit vectors).
var haveVNNI = haveAVX512 && cpu.X86.HasAVX512VNNI

// haveAVXVNNI reports whether the VEX form of VPDPBUSD runs (AVX-VNNI:
// Alder Lake and later), for the AVX2 kernels; noavx512 masks it too.
var haveAVXVNNI = !maskAVX512 && haveSIMD && cpu.X86.HasAVXVNNI

//go:noescape
func q80Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q40Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q41Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q50Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q51Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q5kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q2kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q3kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q6kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func mxfp4Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func iq4nlRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func iq4xsDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32

//go:noescape
func q3kDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32

//go:noescape
func q2kDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32

//go:noescape
func iq4xsDot4AVX2(w *byte, qs *int8, d *float32, bs *int16, nsb, qstride, dstride, bstride int, sc *int16, out *float32)

//go:noescape
func q3kDot4AVX2(w *byte, qs *int8, d *float32, bs *int16, nsb, qstride, dstride, bstride int, sc *int16, out *float32)

//go:noescape
func q2kDot4AVX2(w *byte, qs *int8, d *float32, bs *int16, nsb, qstride, dstride, bstride int, sc *int16, out *float32)

//go:noescape
func dotQ41AVX2(w *byte, qs *int8, d *float32, nb int) float32

//go:noescape
func dotQ41x4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)

//go:noescape
func dotQ50AVX2(w *byte, qs *int8, d *float32, nb int) float32

//go:noescape
func dotQ50x4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)

//go:noescape
func dotQ51AVX2(w *byte, qs *int8, d *float32, nb int) float32

//go:noescape
func dotQ51x4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)

//go:noescape
func dotIQ4NLAVX2(w *byte, qs *int8, d *float32, nb int) float32

//go:noescape
func dotIQ4NLx4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)

//go:noescape
func dotQ80LanesAVX2(w *byte, qs *int8, d *float32, nb int) float32

//go:noescape
func dotQ80Lanesx4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)

//go:noescape
func dotQ40AVX2(w *byte, qs *int8, d *float32, sums *int32, nb int) float32

//go:noescape
func q4kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)

//go:noescape
func q5kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)

//go:noescape
func q40Rows8AVX2(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

//go:noescape
func splitQ8AVX2(qs, out *int8, n int)

//go:noescape
func q80Rows8AVX2(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

//go:noescape
func q40Rows8AVXVNNI(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

//go:noescape
func q40Rows16AVXVNNI(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

//go:noescape
func q40Rows16AVX2(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

//go:noescape
func q80Rows16AVXVNNI(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

//go:noescape
func q80Rows16AVX2(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

//go:noescape
func q80Rows8AVXVNNI(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)

//go:noescape
func iq4xsRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)

//go:noescape
func iq4xsRows8AVXVNNI(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)

//go:noescape
func widenQ8AVX2(qs, out *int8, n int)

//go:noescape
func iq4xsRows8AVX2W(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)

//go:noescape
func iq4xsRows16AVXVNNI(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)

//go:noescape
func q6kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)

//go:noescape
func iq4xsRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q4kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func dotQ80AVX2(w *byte, qs *int8, d *float32, nb int) float32

//go:noescape
func attnAccumQ8AVX2(p *float32, v *byte, rb, hd, n int, out *float32)

//go:noescape
func fwht64AVX2(x *float32, scale float32)

//go:noescape
func attnAccumQ4AVX2(p *float32, v *byte, rb, hd, n int, out *float32)

//go:noescape
func q80Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func mxfp4Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q40Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func iq4nlPacked16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q4kRowsFewVNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q6kRowsFewVNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)

//go:noescape
func q5kRowsFewVNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
