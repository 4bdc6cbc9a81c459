package cpu

import (
	"math"
)

// Gemma 4's arithmetic beyond Gemma 3's (llama.cpp v0.5.0's
// src/models/gemma4.cpp): per-layer embeddings, the output scale, V
// normalised without a weight.

// rmsnormPlain RMS-normalises x in place without a weight (ggml_rms_norm).
func rmsnormPlain(x []float32, eps float32) {
	scale := rmsScale(x, eps)
	for i, v := range x {
		x[i] = scale * v
	}
}

// perLayerInputs computes every token's per-layer inputs from its scaled
// embedding (in b.x) and its rows of the per-layer table: the embedding's
// projection scaled by 1/sqrt(Dim) and normalised per layer, plus the
// table's row scaled by sqrt(PerLayer), all scaled by 1/sqrt(2).
func (b *Backend) perLayerInputs(n int) {
	c, m := b.full, b.m
	w := c.Layers * c.PerLayer
	b.matmul(b.x, n, mmPart{m.PLEProj, b.ple})
	projScale := float32(1 / math.Sqrt(float64(c.Dim)))
	rowScale := float32(math.Sqrt(float64(c.PerLayer)))
	inScale := float32(1 / math.Sqrt(2))
	row := b.pleRow
	for t := range n {
		p := b.ple[t*w : (t+1)*w]
		m.PLE.Row(b.tokID[t], row)
		for l := range c.Layers {
			s := p[l*c.PerLayer : (l+1)*c.PerLayer]
			for i := range s {
				s[i] *= projScale
			}
			rmsnorm(s, s, m.PLENorm, c.RMSEps)
		}
		for i := range p {
			p[i] = (p[i] + row[i]*rowScale) * inScale
		}
	}
}

// gemma4Tail ends block l: the FFN's output joins the residual stream,
// then the per-layer embedding's contribution (gelu of the gate's
// projection, times the layer's input, projected back and normalised)
// is added, and the block's output scale applied. x then holds the whole
// stream (b.flushed).
func (b *Backend) gemma4Tail(l, n int) {
	c, L := b.c, &b.m.Layers[l]
	for t := range n {
		addResidual(b.x[t*c.Dim:(t+1)*c.Dim], b.xb[t*c.Dim:(t+1)*c.Dim], 0)
	}
	if L.PLEGate != nil {
		d, w := c.PerLayer, c.Layers*c.PerLayer
		b.matmul(b.x, n, mmPart{L.PLEGate, b.pleH})
		for t := range n {
			geluMul(b.kern.simd, b.pleH[t*d:(t+1)*d], b.ple[t*w+l*d:t*w+(l+1)*d])
		}
		b.matmul(b.pleH, n, mmPart{L.PLEProj, b.xb})
		for t := range n {
			o := b.xb[t*c.Dim : (t+1)*c.Dim]
			rmsnorm(o, o, L.PLENorm, c.RMSEps)
			addResidual(b.x[t*c.Dim:(t+1)*c.Dim], o, 0)
		}
	}
	if L.OutScale != nil {
		s := L.OutScale[0]
		for i := range b.x[:n*c.Dim] {
			b.x[i] *= s
		}
	}
	b.flushed = true
}

// gemma4FFN is a Gemma 4 block's FFN with experts (26B-A4B): on the
// residual stream x, the dense FFN on its ffn_norm (its output normed by
// post_ffw_norm_1) plus the experts on its pre_ffw_norm_2 (theirs by
// post_ffw_norm_2), routed by the router's logits of x RMS-normalised,
// scaled by 1/sqrt(Dim) and by the router's input scale. Leaves the sum
// in b.xb, which already holds x's ffn_norm.
func (b *Backend) gemma4FFN(l, n int) {
	c, L := b.c, &b.m.Layers[l]
	D := c.Dim
	if len(b.mlp) < n*D {
		b.mlp, b.moeIn, b.routerIn = make([]float32, n*D), make([]float32, n*D), make([]float32, n*D)
	}
	inv := float32(1 / math.Sqrt(float64(D)))
	for t := range n {
		x, r := b.x[t*D:(t+1)*D], b.routerIn[t*D:(t+1)*D]
		rmsnorm(b.moeIn[t*D:(t+1)*D], x, L.MoEInNorm, c.RMSEps)
		copy(r, x)
		rmsnormPlain(r, c.RMSEps)
		for i := range r {
			r[i] = r[i] * inv * L.RouterScale[i]
		}
	}
	b.denseFFN(L, b.xb, n)
	b.normalize(b.xb, nil, nil, L.DenseOutNorm, nil, b.mlp, n)
	b.moe(l, b.moeIn, b.routerIn, n)
	b.normalize(b.xb, nil, nil, L.MoEOutNorm, nil, b.xb, n)
	for t := range n {
		addTo(b.xb[t*D:(t+1)*D], b.mlp[t*D:(t+1)*D])
	}
}
