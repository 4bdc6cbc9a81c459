package cpu

import (
	"math"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
)

// The units of work the CPU backend hands to its pool. Each is a long-lived
// value in the backend, so a step allocates nothing to run them.

// mmPart is one weight matrix of a fused matmul and the output it fills.
type mmPart struct {
	w   *model.Matrix
	out []float32
}

// matmulJob multiplies one input by up to three matrices (Q, K and V share
// their input), its index space the concatenation of their rows.
type matmulJob struct {
	x       []float32
	x16     []float32 // x rounded to half, for F16 parts (nil when none is; half.go)
	q8      *acts     // x quantized, for the int8 path (nil when unused)
	n       int
	parts   [3]mmPart
	np      int
	scratch [][]float32 // per share: dequantized weight rows
	k       *kernels
}

func (j *matmulJob) do(share, lo, hi int) {
	base := 0
	for _, p := range j.parts[:j.np] {
		if s, e := max(lo, base), min(hi, base+p.w.Rows); s < e {
			j.k.matmulRange(p.out, inputFor(p.w, j.x, j.x16), j.q8, j.n, p.w, s-base, e-base, j.scratch[share])
		}
		base += p.w.Rows
	}
}

// matmulRange takes the int8 path when the input came quantized (q8) and w
// has int8 kernels, else the float one.
func (kn *kernels) matmulRange(out, x []float32, q8 *acts, n int, w *model.Matrix, lo, hi int, scratch []float32) {
	if q8 != nil && kn.form(w.Type, q8.prompt) != actNone {
		kn.matmulInt8(out, q8, n, w, lo, hi, scratch)
		return
	}
	if kn.simd {
		kn.matmulRowsFast(out, x, n, w, lo, hi, scratch)
	} else {
		matmulRows(out, x, n, w, lo, hi, scratch)
	}
}

// swigluJob computes h = silu(x.gate^T) * (x.up^T) for a range of FFN rows,
// so the gate and up rows of a range are done by the same thread.
type swigluJob struct {
	x        []float32
	x16      []float32 // x rounded to half, for F16 gate and up (half.go)
	q8       *acts
	n        int
	gate, up *model.Matrix
	h, h2    []float32
	scratch  [][]float32
	k        *kernels
	gelu     bool      // gelu(gate)*up (gemma2); with no gate, gelu(up + upB) (bert)
	upB      []float32 // up's bias (bert, gpt-oss's experts), or nil
	gateB    []float32 // gate's bias (gpt-oss's experts), or nil
	oai      bool      // swiglu_oai (gpt-oss: model.MoE.OAI)
}

func (j *swigluJob) do(share, lo, hi int) {
	if j.gate == nil { // bert: h = gelu(x.up^T + b)
		j.k.matmulRange(j.h, inputFor(j.up, j.x, j.x16), j.q8, j.n, j.up, lo, hi, j.scratch[share])
		f := j.up.Rows
		for t := range j.n {
			h := j.h[t*f+lo : t*f+hi]
			if j.upB != nil {
				addTo(h, j.upB[lo:hi])
			}
			geluMul(j.k.simd, h, nil)
		}
		return
	}
	j.k.matmulRange(j.h, inputFor(j.gate, j.x, j.x16), j.q8, j.n, j.gate, lo, hi, j.scratch[share])
	j.k.matmulRange(j.h2, inputFor(j.up, j.x, j.x16), j.q8, j.n, j.up, lo, hi, j.scratch[share])
	f := j.gate.Rows
	for t := range j.n {
		h, h2 := j.h[t*f+lo:t*f+hi], j.h2[t*f+lo:t*f+hi]
		if j.gateB != nil {
			addTo(h, j.gateB[lo:hi])
		}
		if j.upB != nil {
			addTo(h2, j.upB[lo:hi])
		}
		if j.oai {
			swigluOAI(h, h2)
			continue
		}
		if j.gelu {
			geluMul(j.k.simd, h, h2)
			continue
		}
		n := 0
		if j.k.simd {
			if n = len(h) &^ 7; n > 0 {
				swigluAVX2(&h[0], &h2[0], n, &expConsts[0][0])
			}
		}
		for i := n; i < len(h); i++ {
			h[i] = silu(h[i]) * h2[i]
		}
	}
}

// swigluOAI is ggml's swiglu_oai with gpt-oss's alpha and limit: h =
// min(g, 7) * sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1).
func swigluOAI(h, h2 []float32) {
	const alpha, limit = 1.702, 7
	for i, g := range h {
		x := min(g, limit)
		y := min(max(h2[i], -limit), limit)
		h[i] = x / (1 + float32(math.Exp(float64(alpha*-x)))) * (y + 1)
	}
}

// addResidual adds s*add into x (add itself when s is 0), as ggml scales
// the block's output before the add.
func addResidual(x, add []float32, s float32) {
	if s == 0 {
		addTo(x, add)
		return
	}
	for i, v := range add {
		x[i] += s * v
	}
}

// normJob adds the residual add (if any, plus its bias addB) into token
// rows of x, then normalizes them into dst: RMSNorm, or with normB a
// LayerNorm with that bias.
type normJob struct {
	x, add, addB, norm, normB, dst []float32
	cols                           int
	eps                            float32
	scale                          float32 // multiplies add (granite's residual scale); 0 is 1
}

func (j *normJob) do(_, lo, hi int) {
	c := j.cols
	for t := lo; t < hi; t++ {
		x := j.x[t*c : (t+1)*c]
		switch {
		case j.addB != nil: // x + (add + bias), as ggml adds the bias to its matmul first
			for i, v := range j.add[t*c : (t+1)*c] {
				x[i] += v + j.addB[i]
			}
		case j.add != nil:
			addResidual(x, j.add[t*c:(t+1)*c], j.scale)
		}
		if j.normB != nil {
			layernorm(j.dst[t*c:(t+1)*c], x, j.norm, j.normB, j.eps)
		} else {
			rmsnorm(j.dst[t*c:(t+1)*c], x, j.norm, j.eps)
		}
	}
}

// query readies a query of a layer without K and V of its own (gemma4):
// its per-head norm, RoPE and scale, as do below does for the others.
func (j *storeJob) query(q, norm []float32, pos int) {
	b, c := j.b, j.b.c
	for h := range c.Heads {
		s := q[h*c.HeadDim : (h+1)*c.HeadDim]
		rmsnorm(s, s, norm, c.RMSEps)
	}
	rt := b.rope
	if c.Sliding(j.l) {
		rt = b.ropeSWA
	}
	rt.rope(c, q, c.Heads, pos, b.kern.simd)
	if c.ScaleQ {
		s := b.queryScale()
		for i := range q {
			q[i] *= s
		}
	}
	if b.rotK > 0 {
		rotate(q, b.rotK, b.kern.simd)
	}
}

// storeJob rotates each token's q and k (RoPE) and writes its K and V into
// the paged cache, per head at the layout kvLayer gives.
type storeJob struct {
	b     *Backend
	l     int
	batch *backend.Batch
}

func (j *storeJob) do(_, lo, hi int) {
	b, c := j.b, j.b.c
	L := &b.m.Layers[j.l]
	if L.Wk == nil && L.SSM == nil { // gemma4: this layer attends over another's K and V
		for t := lo; t < hi; t++ {
			j.query(b.q[t*c.QDim():(t+1)*c.QDim()], L.QNorm, b.tokPos[t])
		}
		return
	}
	KV, hd, bs := c.KVDim(), c.HeadDim, b.blockSize
	kc, vc := b.k[j.l], b.v[j.l]
	slot := func(t int) (block, pos int) {
		pos = b.tokPos[t]
		return b.table(&j.batch.Seqs[b.tokSeq[t]], j.l)[pos/bs], pos % bs
	}
	// The slots are cold: ask for all their lines first, so that the
	// stores below do not wait on memory one line at a time.
	for t := lo; t < hi; t++ {
		blk, r := slot(t)
		for h := range c.KVHeads {
			kc.prefetch(b.kvAt(blk, h, r), hd)
			vc.prefetch(b.kvAt(blk, h, r), hd)
		}
	}
	for t := lo; t < hi; t++ {
		pos := b.tokPos[t]
		blk, r := slot(t)
		q, k := b.q[t*c.QDim():(t+1)*c.QDim()], b.kk[t*KV:(t+1)*KV]
		if L.Wv == nil { // gemma4: V is K's projection, before K's norm
			copy(b.vv[t*KV:(t+1)*KV], k)
		}
		qkvHooks(c, L, q, k, b.vv[t*KV:(t+1)*KV])
		if b.m.PosEmbd == nil { // learned positions (bert) take no RoPE
			rt := b.rope
			if c.Sliding(j.l) {
				rt = b.ropeSWA
			}
			rt.rope(c, q, c.Heads, pos, b.kern.simd)
			rt.rope(c, k, c.KVHeads, pos, b.kern.simd)
		}
		if c.ScaleQ { // as llama.cpp's gemma graphs: so a block-format K meets the same q8_0 query
			s := b.queryScale()
			for i := range q {
				q[i] *= s
			}
		}
		if b.rotK > 0 {
			rotate(q, b.rotK, b.kern.simd)
			rotate(k, b.rotK, b.kern.simd)
		}
		if b.rotV > 0 {
			rotate(b.vv[t*KV:(t+1)*KV], b.rotV, b.kern.simd)
		}
		for h := range c.KVHeads {
			kc.put(b.kvAt(blk, h, r), b.kk[t*KV+h*hd:t*KV+(h+1)*hd])
			vc.put(b.kvAt(blk, h, r), b.vv[t*KV+h*hd:t*KV+(h+1)*hd])
		}
	}
}
