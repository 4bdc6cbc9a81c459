package cpu

import (
	"math"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// The per-architecture arithmetic (model.Arch's optional parts), kept to
// the numerics llama.cpp's CPU backend uses for each.

// qkvHooks applies what comes between the Q/K/V matmuls and RoPE for one
// token: biases (qwen2), then RMS norms of Q and K, per head (qwen3) or
// over their whole width (olmoe: a norm as wide as Q).
func qkvHooks(c model.Config, L *model.Layer, q, k, v []float32) {
	if L.Bq != nil {
		addTo(q, L.Bq)
		addTo(k, L.Bk)
		addTo(v, L.Bv)
	}
	if len(L.QNorm) == len(q) && len(q) != c.HeadDim {
		rmsnorm(q, q, L.QNorm, c.RMSEps)
		rmsnorm(k, k, L.KNorm, c.RMSEps)
		return
	}
	if L.QNorm != nil {
		hd := c.HeadDim
		for h := range c.Heads {
			rmsnorm(q[h*hd:(h+1)*hd], q[h*hd:(h+1)*hd], L.QNorm, c.RMSEps)
		}
		for h := range c.KVHeads {
			rmsnorm(k[h*hd:(h+1)*hd], k[h*hd:(h+1)*hd], L.KNorm, c.RMSEps)
		}
	}
	if c.VNorm { // gemma4: V per head, without a weight
		for h := range c.KVHeads {
			rmsnormPlain(v[h*c.HeadDim:(h+1)*c.HeadDim], c.RMSEps)
		}
	}
}

// softcap sets x[i] = cap*tanh(x[i]*scale/cap) (gemma2's attention and
// final logits), as ggml's scale, tanh, scale.
func softcap(x []float32, scale, cap float32) {
	inv := 1 / cap
	for i, v := range x {
		x[i] = cap * float32(math.Tanh(float64(v*scale*inv)))
	}
}

// geluF16 is ggml's GELU table: its CPU backend rounds the input to a half
// float, looks up the half-float GELU of that, and passes |x| >= 10 through
// (ggml_vec_gelu_f32 with GGML_GELU_FP16). Gemma 2's tokens follow it.
var geluF16 = func() []float32 {
	t := make([]float32, 1<<16)
	for i := range t {
		t[i] = quant.F16ToF32(quant.F32ToF16(geluTanh(quant.F16ToF32(uint16(i)))))
	}
	return t
}()

func geluTanh(x float32) float32 {
	const sqrt2OverPi, coefA = 0.79788456080286535587989211986876, 0.044715
	return 0.5 * x * (1 + float32(math.Tanh(float64(sqrt2OverPi*x*(1+coefA*x*x)))))
}

// geluMul sets x[i] = gelu(x[i]) * y[i], or gelu(x[i]) where y is nil.
func geluMul(simd bool, x, y []float32) {
	n := 0
	if simd {
		if n = len(x) &^ 7; n > 0 {
			var yp *float32
			if y != nil {
				yp = &y[:len(x)][0]
			}
			geluAVX2(&x[0], yp, n, &geluF16[0])
		}
	}
	for i := n; i < len(x); i++ {
		if x[i] = gelu(x[i]); y != nil {
			x[i] *= y[i]
		}
	}
}

func gelu(x float32) float32 {
	switch {
	case x <= -10:
		return 0
	case x >= 10:
		return x
	}
	return geluF16[quant.F32ToF16(x)]
}

// ropeParams are ggml_rope_ext's inputs for a model: the per-pair
// frequency step, factors, and YaRN's interpolation.
type ropeParams struct {
	dims       int
	thetaScale float32 // base^(-2/dims)
	factors    []float32
	freqScale  float32
	extFactor  float32
	mscale     float32
	corr       [2]float32
}

func newRopeParams(c model.Config, factors []float32) ropeParams {
	p := ropeParams{dims: c.RopeDim, factors: factors, freqScale: 1, mscale: 1,
		thetaScale: float32(math.Pow(float64(c.RopeTheta), -2/float64(c.RopeDim)))}
	s := c.RopeScaling
	if s.Factor > 0 && s.Type != "" {
		p.freqScale = 1 / s.Factor
	}
	if s.Type == "yarn" {
		p.extFactor, p.mscale = s.ExtFactor, s.AttnFactor
		corr := func(beta float32) float64 {
			return float64(c.RopeDim) * math.Log(float64(s.OrigCtx)/(float64(beta)*2*math.Pi)) / (2 * math.Log(float64(c.RopeTheta)))
		}
		p.corr[0] = float32(max(0, math.Floor(corr(s.BetaFast))))
		p.corr[1] = float32(min(float64(c.RopeDim-1), math.Ceil(corr(s.BetaSlow))))
	}
	return p
}

// angles writes cos and sin of each rotated pair at position pos, as
// ggml's rope does: theta multiplied by thetaScale per pair in float32,
// divided by the pair's factor, then YaRN's blend and magnitude.
func (p *ropeParams) angles(pos int, cos, sin []float32) {
	theta := float32(pos)
	for j := range cos {
		ext := theta
		if p.factors != nil {
			ext = theta / p.factors[j]
		}
		t, m := p.freqScale*ext, p.mscale
		if p.extFactor != 0 {
			y := (float32(j) - p.corr[0]) / max(0.001, p.corr[1]-p.corr[0])
			mix := (1 - min(1, max(0, y))) * p.extFactor
			t = t*(1-mix) + ext*mix
			m *= 1 + 0.1*float32(math.Log(float64(1/p.freqScale)))
		}
		s, co := math.Sincos(float64(t))
		cos[j], sin[j] = float32(co)*m, float32(s)*m
		theta *= p.thetaScale
	}
}
