package cpu

import (
	"math"

	"github.com/batchd/batchd/backend"
)

// aheadBytes is how far ahead of its reads attention prefetches a head's K
// or V: per thread the reads wait on memory (the blocks are scattered), and
// the further the prefetch runs ahead the more lines are in flight. Two
// blocks of a 64-wide F16 head (4 KiB) left decode at 512 positions 3-8%
// slower than 8 KiB (L110 on AVX2, F16 and q8_0 K/V); 12 and 16 KiB were
// slower again at 128 positions, where a head's K is 16 KiB in all.
const aheadBytes = 8 << 10

// ahead is how many of s's blocks attention prefetches ahead of the one it
// reads, span elements of a head a block: aheadBytes of them, at least two.
func (s kvLayer) ahead(span int) int {
	return max(2, aheadBytes/max(1, s.t.RowBytes(span)))
}

// attnJob is one layer's attention split by (query group, head) across the
// pool.
type attnJob struct {
	b       *Backend
	l       int
	batch   *backend.Batch
	scores  [][]float32 // per share, grown to the longest sequence
	scores4 [][]float32 // per share, four queries' scores
	qa      []q8Acts    // per share, the query quantized for a block-format K
	vbuf    [][]float32 // per share, a KV block's V rows dequantized
	q4      [][]float32 // per share, four queries' head rows (fourQ)
	// groups[g] is the first token of query group g (groups[g+1] ends it):
	// four consecutive positions of one sequence, or a single token.
	groups []int32
	heads4 bool // a single token's query heads go four at a time (heads)
}

// attention computes, for every token and query head, softmax(q.K/sqrt(d)) V
// over positions 0..pos of the token's own sequence (0..its last with
// NonCausal: bidirectional, an encoder's), read through its block table.
// Runs of four consecutive prompt tokens go through the four-query kernels
// (F16 K and V, or a block-format K with VNNI: fourQ), which give each
// query the bits the one-query path gives it.
func (b *Backend) attention(l int, batch *backend.Batch, n int) {
	j := &b.attn
	j.b, j.l, j.batch = b, l, batch
	for len(j.scores) < b.pool.n {
		j.scores, j.scores4 = append(j.scores, nil), append(j.scores4, nil)
		j.qa, j.vbuf = append(j.qa, q8Acts{}), append(j.vbuf, make([]float32, b.blockSize*b.widest.HeadDim))
		j.q4 = append(j.q4, make([]float32, 4*b.widest.HeadDim))
	}
	kc, vc := b.k[l], b.v[l]
	quadF16 := b.kern.attn4 != nil && kc.f16 != nil && vc.f16 != nil && b.c.HeadDim%64 == 0
	quadQ := b.kern.vnni && kc.q != nil && b.blockSize%16 == 0
	// On a sliding layer four() needs the last query's window to start by
	// the first query's position: a window of four at least (seen).
	quad := (quadF16 || quadQ) && (!b.c.Sliding(l) || b.c.SlidingWindow >= 4) && !b.c.NonCausal
	j.heads4 = quadF16 && (b.c.Heads/b.c.KVHeads)%4 == 0 && !b.c.NonCausal
	j.groups = j.groups[:0]
	for t := 0; t < n; {
		j.groups = append(j.groups, int32(t))
		g := 1
		for quad && g < 4 && t+g < n && b.tokSeq[t+g] == b.tokSeq[t] && b.tokPos[t+g] == b.tokPos[t]+g {
			g++
		}
		if g < 4 {
			g = 1
		}
		t += g
	}
	j.groups = append(j.groups, int32(n))
	b.pool.runChunked((len(j.groups)-1)*b.c.Heads, max(1, b.c.Heads/2), j)
	j.batch = nil
}

// do walks the sequence's KV a block at a time. A block stores each KV head's
// positions contiguously (see kvLayer), so one kernel call streams them, and
// the block after next is prefetched meanwhile: blocks are scattered, and
// without it the loads wait on memory one block at a time.
func (j *attnJob) do(share, lo, hi int) {
	heads := j.b.c.Heads
	for i := lo; i < hi; i++ {
		g, h := i/heads, i%heads
		t0, t1 := int(j.groups[g]), int(j.groups[g+1])
		if t1-t0 == 4 {
			if j.b.k[j.l].q != nil {
				j.fourQ(share, t0, h)
			} else {
				j.four(share, t0, h)
			}
			continue
		}
		if t1-t0 == 1 && j.heads4 {
			if h%4 == 0 { // heads h+1..h+3 are this unit's too
				j.heads(share, t0, h)
			}
			continue
		}
		// The share's next unit, if it is one(): its first K blocks are
		// fetched while this one's last V blocks are read.
		nt, nh := -1, 0
		if i+1 < hi && !j.heads4 {
			g2 := (i + 1) / heads
			if s := int(j.groups[g2]); int(j.groups[g2+1])-s == 1 {
				nt, nh = s, (i+1)%heads
			}
		}
		for t := t0; t < t1; t++ {
			j.one(share, t, h, nt, nh)
		}
	}
}

// attnScale is the scores' scale: 1/sqrt(head size) unless the model sets
// one; 1 where the query took it (ScaleQ).
func (b *Backend) attnScale() float32 {
	if b.c.ScaleQ {
		return 1
	}
	return b.queryScale()
}

// queryScale is the model's attention scale.
func (b *Backend) queryScale() float32 {
	if b.c.AttnScale != 0 {
		return b.c.AttnScale
	}
	return float32(1 / math.Sqrt(float64(b.c.HeadDim)))
}

// keys is what token t's query sees: positions lo..pos (its own position
// if causal, else its share's last: the backend has stored every token's K
// and V), whose blocks are blocks[lo/blockSize:].
func (j *attnJob) keys(t int) (lo, pos int, blocks []int) {
	b, c := j.b, j.b.c
	window := 0
	if c.Sliding(j.l) {
		window = c.SlidingWindow
	}
	pos = b.tokPos[t]
	if c.NonCausal {
		s := j.batch.Seqs[b.tokSeq[t]]
		pos = s.Pos + len(s.Tokens) - 1
	}
	// A sliding layer sees positions lo..pos: the last window's, or with a
	// symmetric window (gemma-embedding) those within half of it either
	// side. Whole blocks before lo are skipped, the rest of lo's block gets
	// probability 0.
	switch p := b.tokPos[t]; {
	case window > 0 && c.SymmetricWindow:
		lo, pos = max(0, p-window/2), min(pos, p+window/2)
	case window > 0 && pos >= window:
		lo = pos - window + 1
	}
	return lo, pos, b.table(&j.batch.Seqs[b.tokSeq[t]], j.l)[:pos/b.blockSize+1]
}

// one is token t's attention for query head h; nt >= 0 is the token whose
// head nh the share takes next.
func (j *attnJob) one(share, t, h, nt, nh int) {
	b, c := j.b, j.b.c
	hd, group, bs := c.HeadDim, c.Heads/c.KVHeads, j.b.blockSize
	span := bs * hd // one head's slice of a block
	scale := b.attnScale()
	kc, vc := b.k[j.l], b.v[j.l]
	lo, pos, blocks := j.keys(t)
	b0 := lo / bs
	q := b.q[t*c.QDim()+h*hd : t*c.QDim()+(h+1)*hd]
	var qa *q8Acts
	if kc.q != nil {
		qa = &j.qa[share]
		qa.quantize(q, 1, hd)
	}
	if cap(j.scores[share]) < pos+1 {
		j.scores[share] = make([]float32, pos+1, c.Context)
	}
	scores := j.scores[share][:pos+1]
	at := func(bi int) int { return b.kvAt(blocks[bi], h/group, 0) }
	ka, va := kc.ahead(span), vc.ahead(span)
	for bi := b0; bi < min(b0+ka, len(blocks)); bi++ {
		kc.prefetch(at(bi), span)
	}
	for bi, p0 := b0, b0*bs; p0 <= pos; bi, p0 = bi+1, p0+bs {
		if bi+ka < len(blocks) {
			kc.prefetch(at(bi+ka), span)
		}
		kc.dots(q, qa, at(bi), hd, min(bs, pos+1-p0), scores[p0:])
	}
	for bi := b0; bi < min(b0+va, len(blocks)); bi++ {
		vc.prefetch(at(bi), span)
	}
	sum := j.softmax(scores[lo:], scale, h) // its 1/sum is applied to the output
	clear(scores[b0*bs : lo])
	out := b.att[t*c.QDim()+h*hd : t*c.QDim()+(h+1)*hd]
	clear(out)
	// Where V's prefetch runs out, the next unit's first K blocks take its
	// place, so that unit does not start on a miss.
	var next []int
	nk := 0
	if nt >= 0 {
		nlo, _, nblocks := j.keys(nt)
		nk, next = nlo/bs, nblocks[:min(len(nblocks), nlo/bs+ka)]
	}
	for bi, p0 := b0, b0*bs; p0 <= pos; bi, p0 = bi+1, p0+bs {
		if bi+va < len(blocks) {
			vc.prefetch(at(bi+va), span)
		} else if nk < len(next) {
			kc.prefetch(b.kvAt(next[nk], nh/group, 0), span)
			nk++
		}
		vc.accum(scores[p0:min(p0+bs, pos+1)], at(bi), hd, out, j.vbuf[share])
	}
	inv := 1 / sum
	for k := range out {
		out[k] *= inv
	}
	if b.rotV > 0 {
		rotate(out, b.rotV, b.kern.simd) // back: the rotation is its own inverse
	}
}

// softmax sets live to the exponentials of its scaled scores less their
// max, and returns their sum. A layer with sinks (gpt-oss) has head h's
// sink logit join the max and, as its exponential, the sum: as ggml's
// soft_max with sinks, it takes probability from every key and adds
// nothing to the output.
func (j *attnJob) softmax(live []float32, scale float32, h int) float32 {
	if c := j.b.c; c.AttnSoftcap > 0 {
		softcap(live, scale, c.AttnSoftcap)
		scale = 1
	}
	mx := live[0]
	n := 0
	if j.b.kern.simd && len(live) >= 8 {
		n = len(live) &^ 7
		mx = maxAVX2(&live[0], n)
	}
	for _, s := range live[n:] {
		if s > mx { // not max(): its NaN handling made this loop cost half the dot products
			mx = s
		}
	}
	sinks := j.b.m.Layers[j.l].Sinks
	if sinks == nil {
		return expSum(live, mx, scale, j.b.kern.simd)
	}
	top, sub := mx*scale, mx
	if s := sinks[h]; s > top {
		top, sub = s, s/scale
	}
	sum := expSum(live, sub, scale, j.b.kern.simd)
	return float32(float64(sum) + math.Exp(float64(sinks[h]-top)))
}

// four is attention for query head h of tokens t0..t0+3, at positions
// p0..p0+3 of one sequence (F16 K and V), through the family's four-query
// kernels (kernels.attn4). The positions all four see go through the
// four-query kernels; each query's last 0-3 go through the one-query
// kernels, and so do, on a sliding layer, the whole blocks a query sees
// before the last query's window starts. Either way a pair's score and an
// output's terms are computed, in order, as one() computes them.
func (j *attnJob) four(share, t0, h int) {
	b, c := j.b, j.b.c
	hd, bs, qd := c.HeadDim, b.blockSize, c.QDim()
	p0, blocks, stride, buf := j.quad(share, t0)
	lo := j.seen(p0)
	first, common := lo[0]/bs, lo[3]/bs // the first query's first block, the last's
	kc, vc := b.k[j.l], b.v[j.l]
	at := func(bi int) int { return b.kvAt(blocks[bi], h/(c.Heads/c.KVHeads), 0) }
	row := func(p int) int { return at(p/bs) + p%bs*hd } // position p's K or V row
	q := b.q[t0*qd+h*hd:]
	j.dots4(q, qd, at, len(blocks), first, p0, buf, stride)
	for i := 1; i < 4; i++ {
		for p := p0 + 1; p <= p0+i; p++ {
			kc.dots(q[i*qd:i*qd+hd], nil, row(p), hd, 1, buf[i*stride+p:])
		}
	}
	var sums [4]float32
	scale := b.attnScale()
	for i := range 4 {
		r := buf[i*stride : i*stride+p0+i+1]
		sums[i] = j.softmax(r[lo[i]:], scale, h)
		clear(r[lo[i]/bs*bs : lo[i]])
	}
	att := b.att[t0*qd+h*hd:]
	for i := range 4 {
		out := att[i*qd : i*qd+hd]
		clear(out)
		for bi := lo[i] / bs; bi < common; bi++ {
			vc.accum(buf[i*stride+bi*bs:i*stride+(bi+1)*bs], at(bi), hd, out, nil)
		}
	}
	j.accum4(buf, stride, at, len(blocks), common, p0, att, qd)
	for i := range 4 {
		out := att[i*qd : i*qd+hd]
		for p := p0 + 1; p <= p0+i; p++ {
			vc.accum(buf[i*stride+p:i*stride+p+1], row(p), hd, out, nil)
		}
		inv := 1 / sums[i]
		for k := range out {
			out[k] *= inv
		}
	}
}

// heads is attention for query heads h0..h0+3 of token t, which share a
// KV head (F16 K and V, four or more query heads to a KV head), through
// the family's four-query kernels: each K and V row is read once for the
// four, where one() reads it once a head, and each head gets one()'s bits.
func (j *attnJob) heads(share, t, h0 int) {
	b, c := j.b, j.b.c
	hd, bs, qd := c.HeadDim, b.blockSize, c.QDim()
	pos, lo := b.tokPos[t], 0
	if c.Sliding(j.l) && pos >= c.SlidingWindow {
		lo = pos - c.SlidingWindow + 1
	}
	b0 := lo / bs
	blocks := b.table(&j.batch.Seqs[b.tokSeq[t]], j.l)[:pos/bs+1]
	stride := pos + 1
	buf := j.rows4(share, stride)
	at := func(bi int) int { return b.kvAt(blocks[bi], h0/(c.Heads/c.KVHeads), 0) }
	j.dots4(b.q[t*qd+h0*hd:], hd, at, len(blocks), b0, pos, buf, stride)
	var sums [4]float32
	scale := b.attnScale()
	for i := range 4 {
		r := buf[i*stride : (i+1)*stride]
		sums[i] = j.softmax(r[lo:], scale, h0+i)
		clear(r[b0*bs : lo])
	}
	att := b.att[t*qd+h0*hd : t*qd+(h0+4)*hd]
	clear(att)
	j.accum4(buf, stride, at, len(blocks), b0, pos, att, hd)
	for i := range 4 {
		inv := 1 / sums[i]
		for k := i * hd; k < (i+1)*hd; k++ {
			att[k] *= inv
		}
	}
}

// seen is each of four queries' first visible position, from p0 on: its
// window's first on a sliding layer (as one() takes it), else 0.
func (j *attnJob) seen(p0 int) (lo [4]int) {
	if c := j.b.c; c.Sliding(j.l) {
		for i := range lo {
			lo[i] = max(0, p0+i-c.SlidingWindow+1)
		}
	}
	return lo
}

// quad is a run of four queries' setting: the first one's position, the
// blocks the last one sees, and the share's score rows (stride apart).
func (j *attnJob) quad(share, t0 int) (p0 int, blocks []int, stride int, buf []float32) {
	b := j.b
	p0 = b.tokPos[t0]
	blocks = b.table(&j.batch.Seqs[b.tokSeq[t0]], j.l)[:(p0+3)/b.blockSize+1]
	stride = p0 + 4
	return p0, blocks, stride, j.rows4(share, stride)
}

// rows4 is the share's four score rows, stride apart.
func (j *attnJob) rows4(share, stride int) []float32 {
	if cap(j.scores4[share]) < 4*stride {
		j.scores4[share] = make([]float32, 4*stride, 4*max(stride, j.b.c.Context+4))
	}
	return j.scores4[share][:4*stride]
}

// dots4 sets four queries' scores (q, rows qstride apart) against the
// F16 K of the positions from block first through last (rows of buf,
// stride apart), the blocks at at(0..n-1), prefetched ahead; then it
// fetches the first V blocks.
func (j *attnJob) dots4(q []float32, qstride int, at func(int) int, n, first, last int, buf []float32, stride int) {
	b := j.b
	hd, bs := b.c.HeadDim, b.blockSize
	kc, vc := b.k[j.l], b.v[j.l]
	ka, va := kc.ahead(bs*hd), vc.ahead(bs*hd)
	for bi := first; bi < min(first+ka, n); bi++ {
		kc.prefetch(at(bi), bs*hd)
	}
	for bi, pb := first, first*bs; pb <= last; bi, pb = bi+1, pb+bs {
		if bi+ka < n {
			kc.prefetch(at(bi+ka), bs*hd)
		}
		b.kern.attn4.dots(&q[0], qstride, &kc.f16[at(bi)], hd, hd, min(bs, last+1-pb), &buf[pb], stride)
	}
	for bi := first; bi < min(first+va, n); bi++ {
		vc.prefetch(at(bi), bs*hd)
	}
}

// accum4 adds four queries' V terms (their probabilities in buf's rows)
// for the positions from block first through last into out's rows,
// ostride apart.
func (j *attnJob) accum4(buf []float32, stride int, at func(int) int, n, first, last int, out []float32, ostride int) {
	b := j.b
	hd, bs := b.c.HeadDim, b.blockSize
	vc := b.v[j.l]
	va := vc.ahead(bs * hd)
	for bi, pb := first, first*bs; pb <= last; bi, pb = bi+1, pb+bs {
		if bi+va < n {
			vc.prefetch(at(bi+va), bs*hd)
		}
		b.kern.attn4.accum(&buf[pb], stride, &vc.f16[at(bi)], hd, hd, min(bs, last+1-pb), &out[0], ostride)
	}
}

// expConsts are the constants of EXP_Y0 (exp_amd64.h), each repeated across a vector:
// log2(e), ln(2) in two parts, the polynomial, 1, the clamps (exp of less
// underflows, of more overflows), and the exponent bias as int32 bits.
var expConsts = func() (c [13][8]float32) {
	vals := [13]float32{1.44269504088896341, 0.693359375, -2.12194440e-4,
		1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1,
		1, -87.3, math.Float32frombits(127), 88}
	for i, v := range vals {
		for j := range c[i] {
			c[i][j] = v
		}
	}
	return c
}()

// expSum sets x[i] = exp((x[i]-sub)*scale) and returns their sum.
func expSum(x []float32, sub, scale float32, simd bool) float32 {
	var sum float32
	n := 0
	if simd {
		if n = len(x) &^ 7; n > 0 {
			sum = expSumAVX2(&x[0], n, sub, scale, &expConsts[0][0])
		}
	}
	for i := n; i < len(x); i++ {
		e := float32(math.Exp(float64((x[i] - sub) * scale)))
		x[i] = e
		sum += e
	}
	return sum
}

// kvAt is the element offset of position pos (within the block) of KV head
// head in block block of the running layer: the layout kvLayer describes,
// blocks at the widest layer's stride.
func (b *Backend) kvAt(block, head, pos int) int {
	return block*b.kvBlock + (head*b.blockSize+pos)*b.c.HeadDim
}
