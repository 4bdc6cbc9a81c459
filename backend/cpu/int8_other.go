//go:build !amd64 || purego

package cpu

const haveVNNI = false

const haveAVXVNNI = false

func q80Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}
func q40Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}
func q41Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}
func q50Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}
func q51Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}
func iq4nlRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}
func mxfp4Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func iq4xsDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32 {
	panic("no simd")
}
func q3kDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32 {
	panic("no simd")
}
func q2kDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32 {
	panic("no simd")
}
func iq4xsDot4AVX2(w *byte, qs *int8, d *float32, bs *int16, nsb, qstride, dstride, bstride int, sc *int16, out *float32) {
	panic("no simd")
}
func q3kDot4AVX2(w *byte, qs *int8, d *float32, bs *int16, nsb, qstride, dstride, bstride int, sc *int16, out *float32) {
	panic("no simd")
}
func q2kDot4AVX2(w *byte, qs *int8, d *float32, bs *int16, nsb, qstride, dstride, bstride int, sc *int16, out *float32) {
	panic("no simd")
}
func dotQ41AVX2(w *byte, qs *int8, d *float32, nb int) float32 {
	panic("no simd")
}
func dotQ41x4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32) {
	panic("no simd")
}
func dotQ50AVX2(w *byte, qs *int8, d *float32, nb int) float32 {
	panic("no simd")
}
func dotQ50x4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32) {
	panic("no simd")
}
func dotQ51AVX2(w *byte, qs *int8, d *float32, nb int) float32 {
	panic("no simd")
}
func dotQ51x4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32) {
	panic("no simd")
}
func dotIQ4NLAVX2(w *byte, qs *int8, d *float32, nb int) float32 {
	panic("no simd")
}
func dotIQ4NLx4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32) {
	panic("no simd")
}
func dotQ80LanesAVX2(w *byte, qs *int8, d *float32, nb int) float32 {
	panic("no simd")
}
func dotQ80Lanesx4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32) {
	panic("no simd")
}
func dotQ40AVX2(w *byte, qs *int8, d *float32, sums *int32, nb int) float32 {
	panic("no simd")
}
func iq4xsRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q4kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q6kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q5kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q2kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q3kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q4kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int) {
	panic("no simd")
}

func q5kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int) {
	panic("no simd")
}

func q40Rows8AVX2(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int) {
	panic("no simd")
}

func splitQ8AVX2(qs, out *int8, n int) { panic("no simd") }

func q80Rows8AVX2(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int) {
	panic("no simd")
}

func q40Rows8AVXVNNI(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int) {
	panic("no simd")
}

func q40Rows16AVXVNNI(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int) {
	panic("no simd")
}

func q40Rows16AVX2(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int) {
	panic("no simd")
}

func q80Rows16AVXVNNI(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int) {
	panic("no simd")
}

func q80Rows16AVX2(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int) {
	panic("no simd")
}

func q80Rows8AVXVNNI(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int) {
	panic("no simd")
}

func iq4xsRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int) {
	panic("no simd")
}

func iq4xsRows8AVXVNNI(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int) {
	panic("no simd")
}

func widenQ8AVX2(qs, out *int8, n int) { panic("no simd") }

func iq4xsRows8AVX2W(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int) {
	panic("no simd")
}

func iq4xsRows16AVXVNNI(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int) {
	panic("no simd")
}

func q6kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int) {
	panic("no simd")
}

func dotQ80AVX2(w *byte, qs *int8, d *float32, nb int) float32 { panic("no simd") }

func attnAccumQ8AVX2(p *float32, v *byte, rb, hd, n int, out *float32) { panic("no simd") }

func fwht64AVX2(x *float32, scale float32) { panic("no simd") }

func attnAccumQ4AVX2(p *float32, v *byte, rb, hd, n int, out *float32) { panic("no simd") }

func q80Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func mxfp4Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q40Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func iq4nlPacked16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q4kRowsFewVNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q6kRowsFewVNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}

func q5kRowsFewVNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int) {
	panic("no simd")
}
