package cpu

import (
	"math"
	"slices"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
)

// The mixture of experts (model.MoE), as llama.cpp's build_moe_ffn
// computes it: the router's logits, the gate (softmax, sigmoid, or a
// softmax over the top k), the top k experts per token (ties to the lower
// index), their weights (renormalised where the family does), each
// chosen expert's SwiGLU FFN, and the weighted outputs added in the
// order of the choice. The step's token-expert pairs are grouped by
// expert, so each expert's rows are read once for every token routed to
// it: at batch B the experts touched grow much slower than B*k.

// moeScratch is the mixture's scratch, grown to the largest step.
type moeScratch struct {
	logits  []float32 // n x Experts: the router's
	probs   []float32 // n x Experts: the gate's
	weights []float32 // n x Used: the chosen experts' weights, in rank order
	chosen  []int32   // n x Used: the chosen experts, in rank order
	slot    []int32   // n x Used: where each (token, rank) pair sits in the grouped rows
	count   []int     // per expert: its pairs this step
	first   []int     // per expert: its first grouped row
	xg      []float32 // pairs x Dim: the grouped inputs
	hg, hg2 []float32 // pairs x expert FFN
	yg      []float32 // pairs x Dim: each pair's expert output
	gen     []bool    // pairs: the token's role (QuantDot "auto")
	out     []float32 // n x Dim: the mixture's output
	sh, sh2 []float32 // n x shared FFN
	shOut   []float32 // n x Dim
	order   []int32   // a token's experts, sorted for its top k
	next    []int     // per expert: route's next free grouped row
	touched []int32   // the step's experts with pairs, in index order (route)
	views   []acts
	job     expertsJob
	load    backend.ExpertLoad
}

func (s *moeScratch) grow(c model.Config, n int) {
	m := c.MoE
	p := n * m.Used
	if cap(s.logits) < n*m.Experts {
		s.logits, s.probs = make([]float32, n*m.Experts), make([]float32, n*m.Experts)
	}
	if cap(s.chosen) < p {
		s.weights, s.chosen, s.slot, s.gen = make([]float32, p), make([]int32, p), make([]int32, p), make([]bool, p)
		s.xg, s.yg = make([]float32, p*c.Dim), make([]float32, p*c.Dim)
		s.hg, s.hg2 = make([]float32, p*m.FFN), make([]float32, p*m.FFN)
	}
	if cap(s.out) < n*c.Dim {
		s.out = make([]float32, n*c.Dim)
		if m.SharedFFN > 0 {
			s.sh, s.sh2, s.shOut = make([]float32, n*m.SharedFFN), make([]float32, n*m.SharedFFN), make([]float32, n*c.Dim)
		}
	}
	if s.count == nil {
		s.count, s.first, s.order = make([]int, m.Experts), make([]int, m.Experts), make([]int32, m.Experts)
		s.next, s.touched = make([]int, m.Experts), make([]int32, 0, m.Experts)
	}
}

// moe runs block l's mixture on the n normalised token rows of in, routed
// by the router's logits of rin's rows (in's but for gemma4), and leaves
// its output in b.xb, as the dense FFN's down projection does.
func (b *Backend) moe(l int, in, rin []float32, n int) {
	c, L, m := b.c, &b.m.Layers[l], b.c.MoE
	s := &b.experts
	s.grow(c, n)
	b.matmul(rin, n, mmPart{L.Router, s.logits})
	if L.RouterB != nil { // gpt-oss: the router's bias, before the gate
		for t := range n {
			addTo(s.logits[t*m.Experts:(t+1)*m.Experts], L.RouterB)
		}
	}
	b.route(n)
	pairs := n * m.Used
	for i := range pairs { // gather each pair's input row, grouped by expert
		t := i / m.Used
		g := int(s.slot[i])
		copy(s.xg[g*c.Dim:(g+1)*c.Dim], in[t*c.Dim:(t+1)*c.Dim])
		s.gen[g] = b.gen[t]
	}
	if !b.fusedExperts(L, pairs) {
		for _, e := range s.touched {
			k, g := s.count[e], s.first[e]
			gateB, upB := expertBiases(L, e)
			b.expertFFN(s.xg[g*c.Dim:], s.gen[g:], k, L.ExpGate[e], L.ExpUp[e], s.hg[g*m.FFN:], s.hg2[g*m.FFN:],
				gateB, upB, m.OAI)
			b.matmulRoles(s.hg[g*m.FFN:], k, s.gen[g:], mmPart{L.ExpDown[e], s.yg[g*c.Dim:]})
		}
	}
	s.load.Layers++
	s.load.Pairs += pairs
	s.load.Touched += len(s.touched)
	if m.SharedFFN > 0 {
		b.expertFFN(in, b.gen, n, L.ShGate, L.ShUp, s.sh, s.sh2, nil, nil, false)
		b.matmul(s.sh, n, mmPart{L.ShDown, s.shOut})
	}
	b.moeSum = moeSumJob{b: b, l: l, in: in}
	b.pool.run(n, 4, &b.moeSum)
	copy(b.xb[:n*c.Dim], s.out[:n*c.Dim])
}

// expertBiases are expert e's gate and up biases (gpt-oss), or nils.
func expertBiases(L *model.Layer, e int32) (gate, up []float32) {
	if L.ExpGateB == nil {
		return nil, nil
	}
	return L.ExpGateB[e], L.ExpUpB[e]
}

// expertFFN computes h = silu(x.gate^T) * (x.up^T) for n rows of x, in
// runs of one role (QuantDot "auto"), as the dense FFN does.
func (b *Backend) expertFFN(x []float32, gen []bool, n int, gate, up *model.Matrix, h, h2, gateB, upB []float32, oai bool) {
	f := gate.Rows
	for s := 0; s < n; {
		e, int8 := b.nextRun(gen, s, n)
		xs := x[s*b.c.Dim:]
		var q8 *acts
		if int8 {
			q8 = b.quantized(xs, e-s, gate, up)
		}
		b.ffn = swigluJob{x: xs, q8: q8, n: e - s, gate: gate, up: up, h: h[s*f:], h2: h2[s*f:], scratch: b.scratch, k: b.kern,
			x16: b.halfFor(xs, e-s, gate, up), gateB: gateB, upB: upB, oai: oai, gelu: b.c.FFNGELU}
		b.pool.run(f, 16, &b.ffn)
		s = e
	}
}

// route gates each token's router logits, picks its top k experts and
// their weights, and groups the step's pairs by expert (count, first,
// slot: a token's pairs in token order within each expert's rows).
func (b *Backend) route(n int) {
	m, s := b.c.MoE, &b.experts
	E, k := m.Experts, m.Used
	clear(s.count)
	for t := range n {
		logits, probs := s.logits[t*E:(t+1)*E], s.probs[t*E:(t+1)*E]
		switch m.Gating {
		case model.GatingSigmoid:
			for i, v := range logits {
				probs[i] = 1 / (1 + float32(math.Exp(float64(-v))))
			}
		case model.GatingSoftmaxTopK:
			copy(probs, logits)
		default:
			backend.Softmax(probs, logits)
		}
		order := s.order[:E]
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(a, c int32) int { // descending, the lower index first on ties
			switch pa, pc := probs[a], probs[c]; {
			case pa > pc:
				return -1
			case pa < pc:
				return 1
			}
			return 0
		})
		w, ch := s.weights[t*k:(t+1)*k], s.chosen[t*k:(t+1)*k]
		for r := range k {
			ch[r], w[r] = order[r], probs[order[r]]
			s.count[order[r]]++
		}
		gateWeights(w, m)
	}
	g := 0
	s.touched = s.touched[:0]
	for e := range E {
		s.first[e] = g
		g += s.count[e]
		if s.count[e] > 0 {
			s.touched = append(s.touched, int32(e))
		}
	}
	copy(s.next, s.first)
	for i, e := range s.chosen[:n*k] {
		s.slot[i] = int32(s.next[e])
		s.next[e]++
	}
}

// gateWeights turns the chosen experts' probabilities into their weights:
// a softmax over them (gpt-oss), the renormalisation (the sum clamped to
// half precision's smallest normal, as llama.cpp clamps it) and the scale.
func gateWeights(w []float32, m model.MoE) {
	if m.Gating == model.GatingSoftmaxTopK {
		backend.Softmax(w, w)
	}
	if m.Norm {
		var sum float64
		for _, v := range w {
			sum += float64(v)
		}
		d := max(float32(sum), 6.103515625e-5)
		for i := range w {
			w[i] /= d
		}
	}
	if m.Scale != 0 && m.Scale != 1 {
		for i := range w {
			w[i] *= m.Scale
		}
	}
}

// moeSumJob adds each token's expert outputs, weighted, in the order of
// its choice (and the shared expert's, gated), into the mixture's output.
type moeSumJob struct {
	b  *Backend
	l  int
	in []float32
}

func (j *moeSumJob) do(_, lo, hi int) {
	b, s, c := j.b, &j.b.experts, j.b.c
	k, D := c.MoE.Used, c.Dim
	L := &b.m.Layers[j.l]
	for t := lo; t < hi; t++ {
		out := s.out[t*D : (t+1)*D]
		for r := range k {
			g, w := int(s.slot[t*k+r]), s.weights[t*k+r]
			y := s.yg[g*D : (g+1)*D]
			if L.ExpDownB != nil { // gpt-oss: the down projection's bias, before the weight
				addTo(y, L.ExpDownB[s.chosen[t*k+r]])
			}
			if L.ExpDownScale != nil { // gemma4: each expert's output scale, before the weight
				es := L.ExpDownScale[s.chosen[t*k+r]]
				for i := range y {
					y[i] *= es
				}
			}
			if r == 0 {
				for i, v := range y {
					out[i] = v * w
				}
				continue
			}
			for i, v := range y {
				out[i] += v * w
			}
		}
		if c.MoE.SharedFFN == 0 {
			continue
		}
		if L.ShGateInp == nil { // granitemoe's shared expert: ungated
			addTo(out, s.shOut[t*D:(t+1)*D])
			continue
		}
		x := j.in[t*D : (t+1)*D]
		var d float32
		for i, v := range x { // a 1-row matmul, summed in order
			d += v * L.ShGateInp[i]
		}
		gate := 1 / (1 + float32(math.Exp(float64(-d))))
		for i, v := range s.shOut[t*D : (t+1)*D] {
			out[i] += v * gate
		}
	}
}
