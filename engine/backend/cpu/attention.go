package cpu

import (
	"math"
	"unsafe"

	"github.com/batchd/batchd/engine/backend"
	"github.com/batchd/batchd/engine/quant"
)

// ahead is how many KV blocks attention prefetches ahead of the one it reads.
const ahead = 2

// attnJob is one layer's attention split by (token, head) across the pool.
type attnJob struct {
	b      *Backend
	l      int
	batch  *backend.Batch
	scores [][]float32 // per share, grown to the longest sequence
}

// attention computes, for every token and query head, softmax(q.K/sqrt(d)) V
// over positions 0..pos of the token's own sequence, read through its block table.
func (b *Backend) attention(l int, batch *backend.Batch, n int) {
	b.attn.b, b.attn.l, b.attn.batch = b, l, batch
	for len(b.attn.scores) < b.pool.n {
		b.attn.scores = append(b.attn.scores, nil)
	}
	b.pool.runChunked(n*b.c.Heads, max(1, b.c.Heads/2), &b.attn)
	b.attn.batch = nil
}

// do walks the sequence's KV a block at a time. A block stores each KV head's
// positions contiguously (see kvLayer), so one kernel call streams them, and
// the block after next is prefetched meanwhile: blocks are scattered, and
// without it the loads wait on memory one block at a time.
func (j *attnJob) do(share, lo, hi int) {
	b, c := j.b, j.b.c
	hd, group, bs := c.HeadDim, c.Heads/c.KVHeads, j.b.blockSize
	span := bs * hd // one head's slice of a block
	scale := float32(1 / math.Sqrt(float64(hd)))
	if c.AttnScale != 0 {
		scale = c.AttnScale
	}
	window := 0
	if c.Sliding(j.l) {
		window = c.SlidingWindow
	}
	kc, vc := b.k[j.l], b.v[j.l]
	for i := lo; i < hi; i++ {
		t, h := i/c.Heads, i%c.Heads
		pos := b.tokPos[t]
		blocks := j.batch.Seqs[b.tokSeq[t]].Blocks[:pos/bs+1]
		q := b.q[t*c.QDim()+h*hd : t*c.QDim()+(h+1)*hd]
		if cap(j.scores[share]) < pos+1 {
			j.scores[share] = make([]float32, pos+1, c.Context)
		}
		scores := j.scores[share][:pos+1]
		at := func(bi int) int { return b.kvAt(blocks[bi], h/group, 0) }
		// A sliding layer sees positions lo..pos; whole blocks before lo
		// are skipped, the rest of lo's block gets probability 0.
		lo, b0 := 0, 0
		if window > 0 && pos >= window {
			lo = pos - window + 1
			b0 = lo / bs
		}
		for bi := b0; bi < min(b0+ahead, len(blocks)); bi++ {
			kc.prefetch(at(bi), span)
		}
		for bi, p0 := b0, b0*bs; p0 <= pos; bi, p0 = bi+1, p0+bs {
			if bi+ahead < len(blocks) {
				kc.prefetch(at(bi+ahead), span)
			}
			kc.dots(q, at(bi), hd, min(bs, pos+1-p0), scores[p0:])
		}
		for bi := b0; bi < min(b0+ahead, len(blocks)); bi++ {
			vc.prefetch(at(bi), span)
		}
		live, sc := scores[lo:], scale
		if c.AttnSoftcap > 0 {
			softcap(live, scale, c.AttnSoftcap)
			sc = 1
		}
		mx := live[0]
		for _, s := range live[1:] {
			if s > mx { // not max(): its NaN handling made this loop cost half the dot products
				mx = s
			}
		}
		sum := expSum(live, mx, sc, j.b.kern.simd) // softmax, its 1/sum applied to the output
		clear(scores[b0*bs : lo])
		out := b.att[t*c.QDim()+h*hd : t*c.QDim()+(h+1)*hd]
		clear(out)
		for bi, p0 := b0, b0*bs; p0 <= pos; bi, p0 = bi+1, p0+bs {
			if bi+ahead < len(blocks) {
				vc.prefetch(at(bi+ahead), span)
			}
			vc.accum(scores[p0:min(p0+bs, pos+1)], at(bi), hd, out)
		}
		inv := 1 / sum
		for k := range out {
			out[k] *= inv
		}
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
// head in block block: the layout kvLayer describes.
func (b *Backend) kvAt(block, head, pos int) int {
	return ((block*b.c.KVHeads+head)*b.blockSize + pos) * b.c.HeadDim
}

// kvLayer is one layer's K or V store, in float32 or half floats. A block
// holds its KV heads one after another, each head's positions contiguous
// ((block*KVHeads + head)*blockSize + position)*HeadDim, so that attention,
// which runs per head, reads memory in sequence and not at a stride.
type kvLayer struct {
	f32  []float32
	f16  []uint16
	simd bool // run the backend's SIMD kernels
}

func newKVLayer(t quant.DType, n int, simd bool) kvLayer {
	if t == quant.F16 {
		return kvLayer{f16: make([]uint16, n), simd: simd}
	}
	return kvLayer{f32: make([]float32, n), simd: simd}
}

// put stores src at element offset off.
func (s kvLayer) put(off int, src []float32) {
	if s.f16 == nil {
		copy(s.f32[off:off+len(src)], src)
		return
	}
	dst := s.f16[off : off+len(src)]
	n := 0
	if s.simd {
		if n = len(src) &^ 7; n > 0 {
			toF16AVX2(&src[0], &dst[0], n)
		}
	}
	for i := n; i < len(src); i++ {
		dst[i] = quant.F32ToF16(src[i])
	}
}

// prefetch hints the n elements at off into cache.
func (s kvLayer) prefetch(off, n int) {
	if !s.simd {
		return
	}
	if s.f16 == nil {
		prefetchT0((*byte)(unsafe.Pointer(&s.f32[off : off+n][0])), 4*n)
		return
	}
	prefetchT0((*byte)(unsafe.Pointer(&s.f16[off : off+n][0])), 2*n)
}

// dots sets out[j] = q . row j for j < n, row j starting at off + j*stride:
// the attention scores of the positions of one KV block.
func (s kvLayer) dots(q []float32, off, stride, n int, out []float32) {
	hd := len(q)
	end := off + (n-1)*stride + hd
	out = out[:n]
	if s.f16 == nil {
		k := s.f32[off:end]
		if s.simd && hd%8 == 0 {
			attnDotsAVX2(&q[0], &k[0], stride, hd, n, &out[0])
			return
		}
		for j := range out {
			out[j] = dotF32(q, k[j*stride:j*stride+hd])
		}
		return
	}
	k := s.f16[off:end]
	if s.simd && hd%8 == 0 {
		attnDotsF16AVX2(&q[0], &k[0], stride, hd, n, &out[0])
		return
	}
	for j := range out {
		out[j] = dotF16(k[j*stride:j*stride+hd], q)
	}
}

// accum adds sum_j p[j] * row j to out, rows laid out as for dots.
func (s kvLayer) accum(p []float32, off, stride int, out []float32) {
	hd, n := len(out), len(p)
	end := off + (n-1)*stride + hd
	if s.f16 == nil {
		v := s.f32[off:end]
		if s.simd && hd%8 == 0 {
			attnAccumAVX2(&p[0], &v[0], stride, hd, n, &out[0])
			return
		}
		for j, pj := range p {
			row := v[j*stride : j*stride+hd]
			for i := range out {
				out[i] += pj * row[i]
			}
		}
		return
	}
	v := s.f16[off:end]
	if s.simd && hd%8 == 0 {
		attnAccumF16AVX2(&p[0], &v[0], stride, hd, n, &out[0])
		return
	}
	for j, pj := range p {
		row := v[j*stride : j*stride+hd]
		for i := range out {
			out[i] += pj * f16Table[row[i]]
		}
	}
}
