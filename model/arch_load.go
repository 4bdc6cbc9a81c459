package model

import (
	"fmt"
	"math"

	"github.com/batchd/batchd/gguf"
)

// layer loads block i's tensors as the architecture lays them out.
func (l *ggufLoader) layer(a Arch, c Config, i int) Layer {
	tn := a.Tensors
	blk := func(pattern string) string { return fmt.Sprintf(pattern, i) }
	L := Layer{
		AttnNorm: l.vector(blk(tn.AttnNorm), c.Dim),
		FFNNorm:  l.vector(blk(tn.FFNNorm), c.Dim),
	}
	switch {
	case c.Recurrent.Layer(i):
		l.deltaNetLayer(c, i, &L)
	case a.FusedQKV:
		qkv := l.matrix(blk(tn.QKV), c.QDim()+2*c.KVDim(), c.Dim)
		L.Wq, L.Wk, L.Wv = &Matrix{}, &Matrix{}, &Matrix{}
		if qkv.Rows == c.QDim()+2*c.KVDim() { // else the error is recorded
			q, k := c.QDim(), c.KVDim()
			L.Wq, L.Wk, L.Wv = qkv.RowRange(0, q), qkv.RowRange(q, q+k), qkv.RowRange(q+k, q+2*k)
		}
	default:
		l.attnWeights(a, c, i, &L)
	}
	if L.SSM == nil {
		L.Wo = l.matrix(blk(tn.O), c.Dim, c.QDim())
	}
	switch {
	case c.MoE.On() && !a.Gemma4: // gemma4's experts are beside its dense FFN (gemma4Layer)
		l.moeLayer(a, c, i, &L)
	case a.FusedGateUp:
		L.W2 = l.matrix(blk(tn.Down), c.Dim, c.FFN)
		gu := l.matrix(blk(tn.Up), 2*c.FFN, c.Dim)
		L.W1, L.W3 = &Matrix{}, &Matrix{}
		if gu.Rows == 2*c.FFN {
			L.W1, L.W3 = gu.RowRange(0, c.FFN), gu.RowRange(c.FFN, 2*c.FFN)
		}
	default:
		L.W2 = l.matrix(blk(tn.Down), c.Dim, c.FFN)
		if !a.PlainFFN {
			L.W1 = l.matrix(blk(tn.Gate), c.FFN, c.Dim)
		}
		L.W3 = l.matrix(blk(tn.Up), c.FFN, c.Dim)
	}
	if a.AttnBias {
		L.Bq = l.vector(blk(tn.BiasQ), c.QDim())
		L.Bk = l.vector(blk(tn.BiasK), c.KVDim())
		L.Bv = l.vector(blk(tn.BiasV), c.KVDim())
	}
	switch {
	case a.QKNormFull:
		L.QNorm = l.vector(blk(tn.QNorm), c.QDim())
		L.KNorm = l.vector(blk(tn.KNorm), c.KVDim())
	case a.QKNorm && L.SSM != nil: // a recurrent layer has none
	case a.QKNorm:
		L.QNorm = l.vector(blk(tn.QNorm), c.HeadDim)
		if L.Wk != nil {
			L.KNorm = l.vector(blk(tn.KNorm), c.HeadDim)
		}
	}
	if a.PostNorms {
		L.PostAttn = l.vector(blk(tn.PostAttnNorm), c.Dim)
		L.PostFFN = l.vector(blk(tn.PostFFNNorm), c.Dim)
	}
	if a.Encoder {
		L.AttnNormB = l.vector(biasOf(blk(tn.AttnNorm)), c.Dim)
		L.FFNNormB = l.vector(biasOf(blk(tn.FFNNorm)), c.Dim)
	}
	if a.OutBias {
		L.Bo = l.vector(blk(tn.BiasO), c.Dim)
	}
	if a.Sinks {
		L.Sinks = l.vector(blk(tn.Sinks), c.Heads)
	}
	if a.Gemma4 {
		l.gemma4Layer(c, i, &L)
	}
	if a.DenseBias {
		L.Bo = l.vector(blk(tn.BiasO), c.Dim)
		L.BUp = l.vector(blk(tn.BiasUp), c.FFN)
		L.BDown = l.vector(blk(tn.BiasDown), c.Dim)
	}
	return L
}

// attnWeights loads block i's Q, K and V projections: gemma4's layers
// that share K and V have none of their own, and its V may be K's.
func (l *ggufLoader) attnWeights(a Arch, c Config, i int, L *Layer) {
	tn := a.Tensors
	blk := func(pattern string) string { return fmt.Sprintf(pattern, i) }
	L.Wq = l.matrix(blk(tn.Q), c.qRows(), c.Dim)
	if c.KVSource(i) == i {
		L.Wk = l.matrix(blk(tn.K), c.KVDim(), c.Dim)
	}
	if c.KVSource(i) == i && (!a.Gemma4 || hasTensor(l.f, blk(tn.V))) {
		L.Wv = l.matrix(blk(tn.V), c.KVDim(), c.Dim)
	}
}

// archConfig reads the keys a family adds to the Llama ones, and refuses
// the features batchd does not run (never a load with wrong numerics).
func archConfig(f *gguf.File, a Arch, c *Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	if v, ok := f.MetaUint(key("attention.value_length")); ok && int(v) != c.HeadDim {
		return fmt.Errorf("%w: attention.value_length %d differs from key_length %d", ErrUnsupported, v, c.HeadDim)
	}
	if err := ropeScaling(f, c); err != nil {
		return err
	}
	if err := moeConfig(f, a, c); err != nil {
		return err
	}
	if a.DeltaNet {
		if err := recurrentConfig(f, c); err != nil {
			return err
		}
	} else if _, ok := f.Meta[key("rope.dimension_sections")]; ok {
		return fmt.Errorf("%w: M-RoPE (rope.dimension_sections) for %s", ErrUnsupported, c.Arch)
	}
	for _, name := range []string{"rope_factors_long.weight", "rope_factors_short.weight"} {
		if _, ok := f.Tensor(name); ok {
			return fmt.Errorf("%w: %s (Phi-3 LongRoPE) is not implemented", ErrUnsupported, name)
		}
	}
	if v, ok := f.MetaUint(key("attention.sliding_window")); ok && a.Window && v > 0 && v < 1<<31 {
		c.SlidingWindow = int(v)
	}
	if a.Gemma4 {
		return gemma4Config(f, c)
	}
	if err := slidePattern(f, a, c); err != nil {
		return err
	}
	switch v, ok := f.MetaFloat(key("rope.freq_base_swa")); {
	case a.Gemma3: // llama.cpp's default base for sliding layers is 10000; without a window, no layer slides
		if c.SlidingWindow > 0 {
			c.RopeThetaSWA = 10000
			if ok && v > 0 {
				c.RopeThetaSWA = float32(v)
			}
		}
	case ok && float32(v) != c.RopeTheta:
		return fmt.Errorf("%w: rope.freq_base_swa %v differs from rope.freq_base %v", ErrUnsupported, v, c.RopeTheta)
	}
	// llama.cpp reads attention.causal for every architecture; its
	// converter writes false for encoders, which are bidirectional anyway.
	c.NonCausal = a.Encoder || a.Bidirectional
	if v, ok := f.Meta[key("attention.causal")].(bool); ok && !a.Bidirectional {
		c.NonCausal = !v
	}
	c.SymmetricWindow = a.SymWindow && c.SlidingWindow > 0
	if a.Encoder {
		c.LayerNorm, c.PostNorm = true, true
		c.RMSEps = 1e-12
		if v, ok := f.MetaFloat(key("attention.layer_norm_epsilon")); ok {
			c.RMSEps = float32(v)
		}
	}
	if a.Granite {
		return graniteScales(f, c)
	}
	if !a.Gemma {
		return nil
	}
	c.gemmaNumerics()
	if v, ok := f.MetaFloat(key("attn_logit_softcapping")); ok && !a.Gemma3 { // gemma3's graph has none
		c.AttnSoftcap = float32(v)
	}
	if v, ok := f.MetaFloat(key("final_logit_softcapping")); ok {
		c.FinalSoftcap = float32(v)
	}
	// llama.cpp scales Gemma 2 and 3 27B's queries by 1/sqrt(dim/heads) and
	// the others' by 1/sqrt(head_dim); it tells them apart by block count.
	if big := map[bool]int{false: 46, true: 62}[a.Gemma3]; c.Layers == big && c.Heads > 0 {
		c.AttnScale = float32(1 / math.Sqrt(float64(c.Dim/c.Heads)))
	}
	return nil
}

// slidePattern reads which layers slide: the family's default pattern,
// or the file's attention.sliding_window_pattern (one number).
func slidePattern(f *gguf.File, a Arch, c *Config) error {
	key := c.Arch + ".attention.sliding_window_pattern"
	if a.SlidePattern > 0 && c.SlidingWindow > 0 {
		c.SlidePattern = a.SlidePattern
		if v, ok := f.MetaUint(key); ok && v < 1<<16 {
			c.SlidePattern = int(v)
		} else if _, ok := f.Meta[key]; ok {
			return fmt.Errorf("%w: a per-layer attention.sliding_window_pattern", ErrUnsupported)
		}
	}
	return nil
}

// gemmaNumerics are what every Gemma's graph does: GELU, embeddings
// scaled by sqrt(Dim), the query scaled before attention.
func (c *Config) gemmaNumerics() {
	c.FFNGELU, c.ScaleQ = true, true
	c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
}

// graniteScales reads Granite's multipliers as llama.cpp does: logit_scale
// is required (logits are divided by it); the residual, embedding and
// attention scales are 0 (off) where absent.
func graniteScales(f *gguf.File, c *Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	v, ok := f.MetaFloat(key("logit_scale"))
	if !ok || v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%w: %s needs a finite, non-zero %s", ErrMalformed, c.Arch, key("logit_scale"))
	}
	c.LogitScale = float32(v)
	for _, s := range []struct {
		k   string
		dst *float32
	}{{"residual_scale", &c.ResidualScale}, {"embedding_scale", &c.EmbedScale}, {"attention.scale", &c.AttnScale}} {
		if v, ok := f.MetaFloat(key(s.k)); ok {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: %s is %v", ErrMalformed, key(s.k), v)
			}
			*s.dst = float32(v)
		}
	}
	return nil
}

// ropeScaling reads rope.scaling.*: none, linear or yarn.
func ropeScaling(f *gguf.File, c *Config) error {
	key := func(k string) string { return c.Arch + ".rope.scaling." + k }
	typ, _ := f.MetaString(key("type"))
	factor := float32(1)
	if v, ok := f.MetaFloat(key("factor")); ok && v > 0 {
		factor = float32(v)
	}
	switch typ {
	case "", "none":
		return nil
	case "linear":
		c.RopeScaling = RopeScaling{Type: typ, Factor: factor}
	case "yarn":
		s := RopeScaling{Type: typ, Factor: factor, OrigCtx: c.Context, ExtFactor: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
		if v, ok := f.MetaUint(key("original_context_length")); ok && v > 0 && v < 1<<31 {
			s.OrigCtx = int(v)
		}
		if v, ok := f.MetaFloat(key("attn_factor")); ok && v > 0 {
			s.AttnFactor = float32(v)
		}
		c.RopeScaling = s
	default:
		return fmt.Errorf("%w: rope scaling %q (batchd runs none, linear and yarn)", ErrUnsupported, typ)
	}
	return nil
}
