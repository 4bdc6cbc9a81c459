package model

import "math"

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
	x     []float32
	xq    []byte
	n     int
	parts [3]mmPart
	np    int
}

func (j *matmulJob) do(_, lo, hi int) {
	base := 0
	for _, p := range j.parts[:j.np] {
		if s, e := max(lo, base), min(hi, base+p.w.Rows); s < e {
			matmulRange(p.out, j.x, j.xq, j.n, p.w, s-base, e-base)
		}
		base += p.w.Rows
	}
}

func matmulRange(out, x []float32, xq []byte, n int, w *Matrix, lo, hi int) {
	if useSIMD {
		matmulRowsFast(out, x, xq, n, w, lo, hi)
	} else {
		matmulRows(out, x, xq, n, w, lo, hi)
	}
}

// swigluJob computes h = silu(x.gate^T) * (x.up^T) for a range of FFN rows,
// so the gate and up rows of a range are done by the same thread.
type swigluJob struct {
	x        []float32
	xq       []byte
	n        int
	gate, up *Matrix
	h, h2    []float32
}

func (j *swigluJob) do(_, lo, hi int) {
	matmulRange(j.h, j.x, j.xq, j.n, j.gate, lo, hi)
	matmulRange(j.h2, j.x, j.xq, j.n, j.up, lo, hi)
	f := j.gate.Rows
	for t := range j.n {
		h, h2 := j.h[t*f+lo:t*f+hi], j.h2[t*f+lo:t*f+hi]
		for i := range h {
			h[i] = silu(h[i]) * h2[i]
		}
	}
}

// prepJob RMS-normalizes token rows and quantizes them for Q8_0 weights.
type prepJob struct {
	src, norm, dst []float32
	xq             []byte
	cols           int
	eps            float32
	quant          bool
}

func (j *prepJob) do(_, lo, hi int) {
	c := j.cols
	for t := lo; t < hi; t++ {
		row := j.dst[t*c : (t+1)*c]
		if j.norm != nil {
			rmsnorm(row, j.src[t*c:(t+1)*c], j.norm, j.eps)
		}
		if j.quant {
			quantizeAct(row, j.xq[t*actRowBytes(c):(t+1)*actRowBytes(c)])
		}
	}
}

// attnJob is one layer's attention split by (token, head) across the pool.
type attnJob struct {
	b      *CPU
	l      int
	batch  *Batch
	scores [][]float32 // per share, grown to the longest sequence
}

// attention computes, for every token and query head, softmax(q.K/sqrt(d)) V
// over positions 0..pos of the token's own sequence, read through its block table.
func (b *CPU) attention(l int, batch *Batch, n int) {
	b.attn.b, b.attn.l, b.attn.batch = b, l, batch
	for len(b.attn.scores) < b.pool.n {
		b.attn.scores = append(b.attn.scores, nil)
	}
	b.pool.run(n*b.c.Heads, 1, &b.attn)
	b.attn.batch = nil
}

func (j *attnJob) do(share, lo, hi int) {
	b, c := j.b, j.b.c
	hd, KV, group := c.HeadDim, c.KVDim(), c.Heads/c.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	kc, vc := b.k[j.l], b.v[j.l]
	for i := lo; i < hi; i++ {
		t, h := i/c.Heads, i%c.Heads
		pos := b.tokPos[t]
		blocks := j.batch.Seqs[b.tokSeq[t]].Blocks
		q := b.q[t*c.QDim()+h*hd : t*c.QDim()+(h+1)*hd]
		kvOff := (h / group) * hd
		if cap(j.scores[share]) < pos+1 {
			j.scores[share] = make([]float32, pos+1, c.Context)
		}
		scores := j.scores[share][:pos+1]
		for p := 0; p <= pos; p++ {
			slot := blocks[p/b.blockSize]*b.blockSize + p%b.blockSize
			scores[p] = vdot(q, kc[slot*KV+kvOff:slot*KV+kvOff+hd]) * scale
		}
		softmax(scores)
		out := b.att[t*c.QDim()+h*hd : t*c.QDim()+(h+1)*hd]
		clear(out)
		for p := 0; p <= pos; p++ {
			slot := blocks[p/b.blockSize]*b.blockSize + p%b.blockSize
			vaxpy(scores[p], vc[slot*KV+kvOff:slot*KV+kvOff+hd], out)
		}
	}
}
