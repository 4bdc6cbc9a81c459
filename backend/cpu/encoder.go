package cpu

import "math"

// The encoders' arithmetic (bert, nomic-bert): LayerNorm with biases, the
// embeddings' sum and norm, and the dense layers' biases, as llama.cpp's
// build_bert computes them.

// layernorm writes w*(x-mean)/sqrt(var+eps) + bias to out, as ggml_norm
// then ggml_mul and ggml_add: mean and variance summed in float64, the
// centred values scaled by float32 1/sqrt.
func layernorm(out, x, w, bias []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(len(x)))
	var sum2 float64
	for i, v := range x {
		d := v - mean
		out[i] = d
		sum2 += float64(d * d)
	}
	scale := 1 / sqrt32(float32(sum2/float64(len(x)))+eps)
	for i := range out {
		out[i] = out[i]*scale*w[i] + bias[i]
	}
}

// encoderEmbed adds what an encoder adds to token t's embedding x at
// position pos (the type-0 row, the learned position's row), then its
// LayerNorm.
func (b *Backend) encoderEmbed(x []float32, pos int) {
	m := b.m
	if m.TypeEmbd == nil {
		return
	}
	addTo(x, m.TypeEmbd)
	if m.PosEmbd != nil {
		row := b.posRow[:b.c.Dim]
		m.PosEmbd.Row(pos, row)
		addTo(x, row)
	}
	layernorm(x, x, m.EmbedNorm, m.EmbedNormB, b.c.RMSEps)
}

// addBias adds bias to each of the n rows of x.
func addBias(x, bias []float32, n int) {
	for t := range n {
		addTo(x[t*len(bias):(t+1)*len(bias)], bias)
	}
}

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// Bidirectional: the backend runs encoders (backend.Bidirectional).
func (b *Backend) Bidirectional() bool { return true }
