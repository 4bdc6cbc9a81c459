package cpu

import (
	"math"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// The int8 path (backend.Options.QuantDot "int8"): as llama.cpp computes
// with quantized weights, each token's activations are quantized on their
// own to 8-bit blocks of 32 with one scale (ggml's block_q8_0), and weight
// blocks are dotted with them in integers (AVX512-VNNI VPDPBUSD). A block's
// integer sum is exact; the float sums across blocks run in a fixed order
// (lanes of elements, or one lane per row: int8rows.go), which the pure-Go
// loops reproduce bit for bit. A
// token's result depends only on its own activations, so batching stays
// invisible. It applies to every batch size of the formats it covers
// (int8Kind), so a token never changes path with its batch.

// q8Block is the activation block: 32 int8 values and one scale.
const q8Block = 32

// q8Acts holds n tokens' activations quantized: token t's values at
// qs[t*cols:], its block scales (fp16-rounded, as ggml stores them) at
// d[t*cols/32:], and the sums of each four values (a block's eight lanes)
// at sums[t*cols/4:], for the kernels that take an offset off the weights.
type q8Acts struct {
	cols int
	qs   []int8
	d    []float32
	sums []int32
	nsum []int32 // per block: minus its values' sum (the row kernels)
}

// actKind is the activation form a weight format's int8 kernels take.
type actKind uint8

const (
	actNone  actKind = iota // no int8 kernels: the float path
	actQ8_0                 // blocks of 32, fp16 scale (Q4_0, Q8_0, ...)
	actQ8_K                 // blocks of 256, float32 scale, 16-sums (K-quants)
	actQ8_KS                // actQ8_K and its values split and as words (IQ4_XS on plain AVX2)
	actKinds
)

// int8Kind says which activations the int8 path's kernels for t take.
func int8Kind(t quant.DType) actKind {
	switch t {
	case quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.IQ4_NL, quant.Q8_0, quant.MXFP4:
		return actQ8_0
	case quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.IQ4_XS, quant.Q3_K, quant.Q2_K:
		return actQ8_K
	}
	return actNone
}

// needsVNNI reports whether t's int8 kernels need AVX512-VNNI (elsewhere
// they run as Go loops); the others' need only AVX2.
func needsVNNI(t quant.DType) bool { return t == quant.MXFP4 }

// promptInt8 is whether t's prompt tokens take the int8 path under
// QuantDot "auto" without VNNI, as generated tokens do: the formats with
// AVX2 row kernels (int8rows8.go, int8rows8q40.go), whose packed copies
// are then the only ones read. They beat the float path's tiles: 1.8-2.9x
// from four tokens (BenchmarkRows8), L110 pp512 Q4_0 1.83x, Q8_0 on plain
// AVX2 (then with split activations) 1.22-1.23x, IQ4_XS with AVX-VNNI
// 1.9x, on plain AVX2 (split too) 1.07-1.11x, before the kernels of
// issue46-q8-iq4xs.md's second pass.
func (kn *kernels) promptInt8(t quant.DType) bool {
	return kn.rows8Format(t) >= 0 || t == quant.Q4_0 || t == quant.Q8_0
}

// form is the activation form w's type takes on this backend's int8 path
// for a run of prompt or generated tokens, actNone where it takes the
// float path: under QuantDot "auto", formats needsVNNI names stay on the
// float path on a CPU without VNNI, and prompt tokens take it but for
// promptInt8's (decided once per process and role, so batching stays
// invisible).
func (kn *kernels) form(t quant.DType, prompt bool) actKind {
	if kn.auto && !(kn.simd && (kn.vnni || !needsVNNI(t))) {
		return actNone
	}
	if kn.auto && prompt && !kn.promptInt8(t) {
		return actNone
	}
	if kn.simd && !kn.vnni && !kn.avxvnni {
		if t == quant.IQ4_XS {
			return actQ8_KS
		}
	}
	return int8Kind(t)
}

// acts is one matmul input quantized in the forms its weights need.
type acts struct {
	q8  q8Acts
	q8k q8KActs
	has [actKinds]bool
	// prompt: the tokens are a run of prompt tokens under QuantDot "auto"
	// (form's role).
	prompt bool
	// pool, where set, splits a large input's quantization across the
	// threads (a prompt's: else one thread quantizes while the rest wait).
	pool *workers
	job  quantJob
}

// quantShare is the least work, in values, a thread takes of a split
// quantization: below twice it one thread does it all.
const quantShare = 16384

// need quantizes x (n rows of cols) in form k (w's), once per input.
func (a *acts) need(x []float32, n int, w *model.Matrix, k actKind) {
	if k == actNone || a.has[k] {
		return
	}
	switch k {
	case actQ8_KS:
		a.need(x, n, w, actQ8_K)
		a.has[k] = true
		a.q8k.split = twoBytes(a.q8k.split, a.q8k.qs, splitQ8AVX2)
		a.q8k.wide = twoBytes(a.q8k.wide, a.q8k.qs, widenQ8AVX2)
		return
	}
	a.has[k] = true
	switch {
	case a.pool != nil && n*w.Cols >= 2*quantShare:
		a.job = quantJob{a: a, k: k, x: x}
		if k == actQ8_0 {
			a.q8.size(n, w.Cols)
			a.pool.run(len(a.q8.d), quantShare/q8Block, &a.job)
		} else {
			a.q8k.size(n, w.Cols)
			a.pool.run(len(a.q8k.d), quantShare/qkK, &a.job)
		}
		a.job.x = nil
	case k == actQ8_0:
		a.q8.quantize(x, n, w.Cols)
	case k == actQ8_K:
		a.q8k.quantize(x, n, w.Cols)
	}
}

// quantJob is need's split: blocks lo..hi of x in form k.
type quantJob struct {
	a *acts
	k actKind
	x []float32
}

func (j *quantJob) do(_, lo, hi int) {
	if j.k == actQ8_0 {
		j.a.q8.blocks(j.x, lo, hi)
	} else {
		j.a.q8k.blocks(j.x, lo, hi)
	}
}

// quantize fills a with n rows of x (cols wide, a multiple of 32) as ggml's
// quantize_row_q8_0 does: scale amax/127 rounded to fp16, values
// round-to-nearest-even of x*127/amax.
func (a *q8Acts) quantize(x []float32, n, cols int) {
	a.size(n, cols)
	a.blocks(x, 0, len(a.d))
}

// size shapes a for n rows of cols.
func (a *q8Acts) size(n, cols int) {
	a.cols = cols
	if cap(a.qs) < n*cols {
		a.qs = make([]int8, n*cols)
		a.d = make([]float32, n*cols/q8Block)
		a.sums = make([]int32, n*cols/4)
		a.nsum = make([]int32, n*cols/q8Block)
	}
	a.qs, a.d, a.sums, a.nsum = a.qs[:n*cols], a.d[:n*cols/q8Block], a.sums[:n*cols/4], a.nsum[:n*cols/q8Block]
}

// twoBytes is qs in a form of two bytes a value (splitQ8AVX2's or
// widenQ8AVX2's, by form) into buf, grown as needed.
func twoBytes(buf, qs []int8, form func(qs, out *int8, n int)) []int8 {
	if cap(buf) < 2*len(qs) {
		buf = make([]int8, 2*len(qs))
	}
	buf = buf[:2*len(qs)]
	if len(qs) > 0 {
		form(&qs[0], &buf[0], len(qs))
	}
	return buf
}

// blocks quantizes x's blocks lo..hi into a (sized).
func (a *q8Acts) blocks(x []float32, lo, hi int) {
	if hi <= lo {
		return
	}
	v := q8Acts{qs: a.qs[lo*q8Block : hi*q8Block], d: a.d[lo:hi], sums: a.sums[lo*8 : hi*8], nsum: a.nsum[lo:hi]}
	x = x[lo*q8Block : hi*q8Block]
	if haveSIMD {
		quantizeQ80AVX2(&x[0], hi-lo, &v.qs[0], &v.d[0], &v.sums[0], &v.nsum[0])
		return
	}
	quantizeQ80Go(&v, x)
}

// quantizeQ80Go is quantize's loop over a's blocks, already sized.
func quantizeQ80Go(a *q8Acts, x []float32) {
	for b := range a.d {
		v := x[b*q8Block : (b+1)*q8Block]
		amax := absMax(v)
		a.d[b] = quant.F16ToF32(quant.F32ToF16(amax / 127))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		q := a.qs[b*q8Block : (b+1)*q8Block]
		for i, f := range v {
			q[i] = int8(roundEven(f * id))
		}
		var sum int32
		for l := range 8 {
			a.sums[b*8+l] = int32(q[4*l]) + int32(q[4*l+1]) + int32(q[4*l+2]) + int32(q[4*l+3])
			sum += a.sums[b*8+l]
		}
		a.nsum[b] = -sum
	}
}

// absMax is the largest magnitude in x, compared as bits: with the sign
// cleared a float's bits order as it does (a NaN's above every number).
func absMax(x []float32) float32 {
	var m uint32
	for _, v := range x {
		if a := math.Float32bits(v) &^ (1 << 31); a > m {
			m = a
		}
	}
	return math.Float32frombits(m)
}

// roundEven rounds y (|y| < 2^22) to the nearest integer, ties to even, in
// float32 as the SIMD quantizers' round does: adding and taking away 1.5
// x 2^23 leaves no fraction bits, so the add rounds.
func roundEven(y float32) int32 {
	const magic = 12582912
	return int32((y + magic) - magic)
}

// hsum8 adds eight lanes in the order the kernels fold them.
func hsum8(a *[8]float32) float32 {
	return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

// fold16 folds sixteen lanes: lane i plus lane i+8, then hsum8.
func fold16(acc *[16]float32) float32 {
	var a [8]float32
	for i := range a {
		a[i] = acc[i] + acc[i+8]
	}
	return hsum8(&a)
}

// dotQ40Go is the Q4_0 x q8 dot of one row and one token, lane by lane as
// dotQ40AVX2 sums it (CPUs without VNNI; with it, Q4_0 takes the row form,
// int8rows.go): lane l of block b holds elements 4l..4l+3, in float lane l
// (b even) or 8+l (b odd).
func dotQ40Go(w []byte, qs []int8, d []float32, nb int) float32 {
	var acc [16]float32
	for b := range nb {
		blk := w[b*18 : (b+1)*18]
		ds := f16(blk) * d[b]
		q := qs[b*q8Block : (b+1)*q8Block]
		for l := range 8 {
			var p int32
			for k := range 4 {
				e := 4*l + k
				nib := int32(blk[2+e%16] & 0xF)
				if e >= 16 {
					nib = int32(blk[2+e%16] >> 4)
				}
				p += (nib - 8) * int32(q[e])
			}
			i := 8*(b%2) + l
			acc[i] = acc[i] + float32(float32(p)*ds)
		}
	}
	return fold16(&acc)
}

// matmulInt8 computes out[t*w.Rows+r] for rows [lo, hi) and n tokens from
// the quantized activations, by the weights' format: its row kernel with
// VNNI (int8rows.go), else its AVX2 kernels (Q4_K's and Q6_K's on their
// packed rows, int8rows8.go); Q5_K and MXFP4 have none, so matmulRows16
// runs their Go loops (rowTail).
func (kn *kernels) matmulInt8(out []float32, a *acts, n int, w *model.Matrix, lo, hi int, scratch []float32) {
	if kern := rowKernel(w.Type); kn.simd && kn.vnni || needsVNNI(w.Type) {
		kn.matmulRows16(out, a, n, w, lo, hi, scratch, kern)
		return
	}
	if f := kn.rows8Format(w.Type); f >= 0 {
		if p := w.Packed(); p != nil && kn.simd {
			kn.matmulRows8(out, a, n, w, p, lo, hi, scratch, f)
			return
		}
		// Unpacked (under 16 rows), or the Go loops.
		rb := w.Type.RowBytes(w.Cols)
		for r := lo; r < hi; r++ {
			for t := range n {
				out[t*w.Rows+r] = rowTail(w.Data[r*rb:(r+1)*rb], a, t, w.Type, w.Cols)
			}
		}
		return
	}
	switch w.Type {
	case quant.Q4_0:
		switch p := w.Packed(); {
		case p != nil && kn.avxvnni:
			kn.matmulHalves(out, a, n, w, p, lo, hi, scratch, q40Rows8AVXVNNI, q40Rows16AVXVNNI)
		case p != nil && kn.simd:
			kn.matmulHalves(out, a, n, w, p, lo, hi, scratch, q40Rows8AVX2, q40Rows16AVX2)
		default:
			kn.matmulQ40(out, &a.q8, n, w, lo, hi)
		}
	case quant.Q4_1:
		kn.matmulBlock32(out, &a.q8, n, w, lo, hi, scratch[len(scratch)-resLen:], q41Int8)
	case quant.Q5_0:
		kn.matmulBlock32(out, &a.q8, n, w, lo, hi, scratch[len(scratch)-resLen:], q50Int8)
	case quant.Q5_1:
		kn.matmulBlock32(out, &a.q8, n, w, lo, hi, scratch[len(scratch)-resLen:], q51Int8)
	case quant.IQ4_NL:
		kn.matmulBlock32(out, &a.q8, n, w, lo, hi, scratch[len(scratch)-resLen:], iq4nlInt8)
	case quant.Q8_0:
		switch p := w.Packed(); {
		case p != nil && kn.avxvnni:
			kn.matmulHalves(out, a, n, w, p, lo, hi, scratch, q80Rows8AVXVNNI, q80Rows16AVXVNNI)
		case p != nil && kn.simd:
			kn.matmulHalves(out, a, n, w, p, lo, hi, scratch, q80Rows8AVX2, q80Rows16AVX2)
		default:
			kn.matmulBlock32(out, &a.q8, n, w, lo, hi, scratch[len(scratch)-resLen:], q80Int8)
		}
	case quant.IQ4_XS:
		kn.matmulSuper(out, &a.q8k, n, w, lo, hi, scratch, iq4xsInt8)
	case quant.Q3_K:
		kn.matmulSuper(out, &a.q8k, n, w, lo, hi, scratch, q3kInt8)
	case quant.Q2_K:
		kn.matmulSuper(out, &a.q8k, n, w, lo, hi, scratch, q2kInt8)
	}
}

// matmulQ40 is matmulInt8 for Q4_0 without VNNI, in element lanes.
func (kn *kernels) matmulQ40(out []float32, a *q8Acts, n int, w *model.Matrix, lo, hi int) {
	cols, rows := w.Cols, w.Rows
	nb, rb := cols/q8Block, w.Type.RowBytes(cols)
	for r := lo; r < hi; r++ {
		row := w.Data[r*rb : (r+1)*rb]
		for t := range n {
			qs, d := a.qs[t*cols:(t+1)*cols], a.d[t*nb:(t+1)*nb]
			if kn.simd {
				out[t*rows+r] = dotQ40AVX2(&row[0], &qs[0], &d[0], &a.sums[t*cols/4], nb)
			} else {
				out[t*rows+r] = dotQ40Go(row, qs, d, nb)
			}
		}
	}
}
