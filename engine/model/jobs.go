package model

// The units of work the CPU backend hands to its pool. Each is a long-lived
// value in the backend, so a step allocates nothing to run them.

// mmPart is one weight matrix of a fused matmul and the output it fills.
type mmPart struct {
	w   *Matrix
	out []float32
}

// matmulJob multiplies one input by up to three matrices (Q, K and V share
// their input), its index space the concatenation of their rows.
type matmulJob struct {
	x       []float32
	n       int
	parts   [3]mmPart
	np      int
	scratch [][]float32 // per share: dequantized weight rows
}

func (j *matmulJob) do(share, lo, hi int) {
	base := 0
	for _, p := range j.parts[:j.np] {
		if s, e := max(lo, base), min(hi, base+p.w.Rows); s < e {
			matmulRange(p.out, j.x, j.n, p.w, s-base, e-base, j.scratch[share])
		}
		base += p.w.Rows
	}
}

func matmulRange(out, x []float32, n int, w *Matrix, lo, hi int, scratch []float32) {
	if useSIMD {
		matmulRowsFast(out, x, n, w, lo, hi, scratch)
	} else {
		matmulRows(out, x, n, w, lo, hi, scratch)
	}
}

// swigluJob computes h = silu(x.gate^T) * (x.up^T) for a range of FFN rows,
// so the gate and up rows of a range are done by the same thread.
type swigluJob struct {
	x        []float32
	n        int
	gate, up *Matrix
	h, h2    []float32
	scratch  [][]float32
}

func (j *swigluJob) do(share, lo, hi int) {
	matmulRange(j.h, j.x, j.n, j.gate, lo, hi, j.scratch[share])
	matmulRange(j.h2, j.x, j.n, j.up, lo, hi, j.scratch[share])
	f := j.gate.Rows
	for t := range j.n {
		h, h2 := j.h[t*f+lo:t*f+hi], j.h2[t*f+lo:t*f+hi]
		n := 0
		if useSIMD {
			if n = len(h) &^ 7; n > 0 {
				swigluAVX2(&h[0], &h2[0], n, &expConsts[0][0])
			}
		}
		for i := n; i < len(h); i++ {
			h[i] = silu(h[i]) * h2[i]
		}
	}
}

// normJob RMS-normalizes token rows.
type normJob struct {
	src, norm, dst []float32
	cols           int
	eps            float32
}

func (j *normJob) do(_, lo, hi int) {
	c := j.cols
	for t := lo; t < hi; t++ {
		rmsnorm(j.dst[t*c:(t+1)*c], j.src[t*c:(t+1)*c], j.norm, j.eps)
	}
}
