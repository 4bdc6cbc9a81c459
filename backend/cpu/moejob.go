package cpu

import "github.com/batchd/batchd/model"

// expertsJob runs every touched expert of a step in one hand-off to the
// pool: its index space is the touched experts' rows end to end (their
// gate and up rows, or their down rows), so that a decode step pays two
// waits for the mixture rather than two per expert. Each expert's segment
// is the work the per-expert path does for it, on its grouped rows.
type expertsJob struct {
	b       *Backend
	L       *model.Layer
	down    bool
	rows    int     // rows per expert: the expert FFN (gate, up) or Dim (down)
	touched []int32 // the experts with pairs, in index order
	x, x16  []float32
	q8      *acts  // all pairs' inputs quantized (nil: the float path)
	views   []acts // per touched expert: its rows of q8
}

func (j *expertsJob) do(share, lo, hi int) {
	b, c := j.b, j.b.c
	s := &b.experts
	F := c.MoE.FFN
	for i := lo / j.rows; i < len(j.touched) && i*j.rows < hi; i++ {
		e := j.touched[i]
		g, k := s.first[e], s.count[e]
		rlo, rhi := max(lo-i*j.rows, 0), min(hi-i*j.rows, j.rows)
		var q8 *acts
		if j.q8 != nil {
			q8 = &j.views[i]
		}
		var x16 []float32
		if j.x16 != nil {
			x16 = j.x16[g*j.width():]
		}
		if j.down {
			w := j.L.ExpDown[e]
			b.kern.matmulRange(s.yg[g*c.Dim:], inputFor(w, j.x[g*F:], x16), q8, k, w, rlo, rhi, b.scratch[share])
			continue
		}
		sw := swigluJob{x: j.x[g*c.Dim:], x16: x16, q8: q8, n: k, gate: j.L.ExpGate[e], up: j.L.ExpUp[e],
			h: s.hg[g*F:], h2: s.hg2[g*F:], scratch: b.scratch, k: b.kern, oai: c.MoE.OAI, gelu: c.FFNGELU}
		sw.gateB, sw.upB = expertBiases(j.L, e)
		sw.do(share, rlo, rhi)
	}
}

// width is the input row's: Dim into gate and up, the expert FFN into down.
func (j *expertsJob) width() int {
	if j.down {
		return j.b.c.MoE.FFN
	}
	return j.b.c.Dim
}

// view points v at rows g.. of a's quantized rows.
func (a *acts) view(g int, v *acts) {
	v.has, v.prompt = a.has, a.prompt
	if a.has[actQ8_0] {
		c, nb := a.q8.cols, a.q8.cols/q8Block
		v.q8 = q8Acts{cols: c, qs: a.q8.qs[g*c:], d: a.q8.d[g*nb:], sums: a.q8.sums[g*c/4:], nsum: a.q8.nsum[g*nb:]}
	}
	if a.has[actQ8_K] {
		c := a.q8k.cols
		v.q8k = q8KActs{cols: c, qs: a.q8k.qs[g*c:], d: a.q8k.d[g*c/qkK:], bs: a.q8k.bs[g*c/16:], nsum: a.q8k.nsum[g*c/32:]}
		if a.has[actQ8_KS] {
			v.q8k.split, v.q8k.wide = a.q8k.split[2*g*c:], a.q8k.wide[2*g*c:]
		}
	}
}

// fusedExperts runs the step's experts as two pool hand-offs (gate and up,
// then down) when all its pairs take one path (a decode step, a prompt
// chunk); it reports false, having done nothing, for a step that mixes
// prompt and generated tokens under QuantDot "auto".
func (b *Backend) fusedExperts(L *model.Layer, pairs int) bool {
	s, c := &b.experts, b.c
	end, int8 := b.nextRun(s.gen, 0, pairs)
	if end != pairs {
		return false
	}
	if cap(s.views) < len(s.touched) {
		s.views = make([]acts, c.MoE.Experts)
	}
	s.views = s.views[:len(s.touched)]
	gate, up, down := L.ExpGate[s.touched[0]], L.ExpUp[s.touched[0]], L.ExpDown[s.touched[0]]
	run := func(down bool, x []float32, width int, gate, up *model.Matrix, rows, chunk int) {
		j := &s.job
		*j = expertsJob{b: b, L: L, down: down, rows: rows, touched: s.touched, x: x, views: s.views,
			x16: b.halfFor(x, pairs, gate, up)}
		if int8 {
			j.q8 = b.quantized(x, pairs, gate, up)
		}
		if j.q8 != nil {
			for i, e := range s.touched {
				j.q8.view(s.first[e], &s.views[i])
			}
		}
		b.pool.run(len(s.touched)*rows, chunk, j)
	}
	run(false, s.xg, c.Dim, gate, up, c.MoE.FFN, 16)
	run(true, s.hg, c.MoE.FFN, nil, down, c.Dim, 16)
	return true
}
