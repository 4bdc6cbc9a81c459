package cpu

// fourQ is four() for a block-format K on AVX512-VNNI: the four queries,
// quantized together, meet each sixteen rows of K in one row-kernel call
// (the rows are loaded and widened once for the four), and V is summed per
// query as one() sums it. A row's score is its blocks' integer sums scaled
// in block order whichever tokens share the call, so each query gets the
// bits one() gives it. On a sliding layer each query's scores and V start
// at its own window, as one()'s do.
func (j *attnJob) fourQ(share, t0, h int) {
	b, c := j.b, j.b.c
	hd, bs, qd := c.HeadDim, b.blockSize, c.QDim()
	p0, blocks, stride, buf := j.quad(share, t0)
	lo := j.seen(p0)
	first := lo[0] / bs
	kc, vc := b.k[j.l], b.v[j.l]
	at := func(bi int) int { return b.kvAt(blocks[bi], h/(c.Heads/c.KVHeads), 0) }
	x := j.q4[share][:4*hd]
	for i := range 4 {
		copy(x[i*hd:(i+1)*hd], b.q[(t0+i)*qd+h*hd:])
	}
	qa := &j.qa[share]
	qa.quantize(x, 4, hd)
	kern := rowKernel(kc.t)
	nb := hd / 32
	rb := nb * kc.bb
	var acc [48 * 4]float32
	var res [16 * 4]float32
	ka := kc.ahead(bs * hd)
	for bi, pb := first, first*bs; pb <= p0+3; bi, pb = bi+1, pb+bs {
		if bi+ka < len(blocks) {
			kc.prefetch(at(bi+ka), bs*hd)
		}
		w := kc.bytes(at(bi), bs*hd)
		for r0 := 0; r0 < bs && pb+r0 <= p0+3; r0 += 16 {
			kern(&w[r0*rb], rb, &qa.qs[0], &qa.d[0], &qa.nsum[0], hd, nb, nb, 4, &acc[0], &res[0], 16)
			for i := range 4 {
				for r := r0; r < r0+16 && pb+r <= p0+i; r++ {
					buf[i*stride+pb+r] = res[i*16+r-r0]
				}
			}
		}
	}
	scale := b.attnScale()
	for i := range 4 {
		pos := p0 + i
		r, b0 := buf[i*stride:i*stride+pos+1], lo[i]/bs
		sum := j.softmax(r[lo[i]:], scale, h)
		clear(r[b0*bs : lo[i]])
		out := b.att[(t0+i)*qd+h*hd : (t0+i)*qd+(h+1)*hd]
		clear(out)
		for bi, pb := b0, b0*bs; pb <= pos; bi, pb = bi+1, pb+bs {
			vc.accum(buf[i*stride+pb:i*stride+min(pb+bs, pos+1)], at(bi), hd, out, j.vbuf[share])
		}
		inv := 1 / sum
		for k := range out {
			out[k] *= inv
		}
		if b.rotV > 0 {
			rotate(out, b.rotV, b.kern.simd)
		}
	}
}
