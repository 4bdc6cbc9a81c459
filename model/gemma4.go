package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/batchd/batchd/gguf"
)

// LayerShape is one layer's widths where a family's layers differ
// (gemma4: its sliding and full layers have their own head width, KV
// heads and RoPE width; its KV-sharing layers a wider FFN).
type LayerShape struct{ HeadDim, KVHeads, RopeDim, FFN int }

// At is c as layer l sees it: the layer's shape in HeadDim, KVHeads,
// RopeDim and FFN (c itself where every layer has the Config's shape).
func (c Config) At(l int) Config {
	if c.Shapes == nil {
		return c
	}
	s := c.Shapes[l]
	c.HeadDim, c.KVHeads, c.RopeDim, c.FFN = s.HeadDim, s.KVHeads, s.RopeDim, s.FFN
	return c
}

// Widest is c with the largest of every layer's widths: what scratch
// sized for any layer needs.
func (c Config) Widest() Config {
	for l := range c.Shapes {
		s := c.Shapes[l]
		c.HeadDim, c.KVHeads = max(c.HeadDim, s.HeadDim), max(c.KVHeads, s.KVHeads)
		c.RopeDim, c.FFN = max(c.RopeDim, s.RopeDim), max(c.FFN, s.FFN)
	}
	return c
}

// KVWidth is the most K (or V) elements one token keeps in any layer.
func (c Config) KVWidth() int {
	w := c.KVDim()
	for l := range c.Shapes {
		w = max(w, c.At(l).KVDim())
	}
	return w
}

// KVSource is the layer whose K and V layer l attends over: l itself,
// or for gemma4's last KVShared layers the last earlier layer of its kind
// (sliding or full), as llama.cpp's layer_reuse_cb maps them.
func (c Config) KVSource(l int) int {
	start := c.Layers - c.KVShared
	if c.KVShared == 0 || l < start {
		return l
	}
	if c.Sliding(l) {
		return start - 2
	}
	return start - 1
}

// gemma4Config reads Gemma 4's keys (llama.cpp's llama_model_gemma4):
// which layers slide (a per-layer array), the sliding layers' own head
// width, RoPE width and base, KV heads and FFN widths per layer, the
// layers that share earlier layers' K and V, and the per-layer
// embeddings' width.
func gemma4Config(f *gguf.File, c *Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	n := c.Layers
	slide, ok := metaBools(f, key("attention.sliding_window_pattern"), n)
	if !ok {
		return fmt.Errorf("%w: %s must be %d booleans", ErrMalformed, key("attention.sliding_window_pattern"), n)
	}
	if c.SlidingWindow <= 0 {
		return fmt.Errorf("%w: %s needs attention.sliding_window", ErrMalformed, c.Arch)
	}
	c.SlideLayers = slide
	kv, ok1 := metaInts(f, key("attention.head_count_kv"), n, c.KVHeads)
	ffn, ok2 := metaInts(f, key("feed_forward_length"), n, c.FFN)
	heads, ok3 := metaInts(f, key("attention.head_count"), n, c.Heads)
	if !ok1 || !ok2 || !ok3 || slices.Min(heads) != slices.Max(heads) {
		return fmt.Errorf("%w: %s: head_count (one value), head_count_kv and feed_forward_length (one or %d)",
			ErrUnsupported, c.Arch, n)
	}
	hdSWA, rotSWA := c.HeadDim, 0
	if v, ok := f.MetaUint(key("attention.key_length_swa")); ok && v < 1<<16 {
		hdSWA = int(v)
	}
	if v, ok := f.MetaUint(key("attention.value_length_swa")); ok && int(v) != hdSWA {
		return fmt.Errorf("%w: attention.value_length_swa %d differs from key_length_swa %d", ErrUnsupported, v, hdSWA)
	}
	rotSWA = hdSWA
	if v, ok := f.MetaUint(key("rope.dimension_count_swa")); ok && v < 1<<16 {
		rotSWA = int(v)
	}
	c.Shapes = make([]LayerShape, n)
	for l := range n {
		s := LayerShape{HeadDim: c.HeadDim, KVHeads: kv[l], RopeDim: c.RopeDim, FFN: ffn[l]}
		if slide[l] {
			s.HeadDim, s.RopeDim = hdSWA, rotSWA
		}
		c.Shapes[l] = s
	}
	c.FFN = slices.Max(ffn)
	if v, ok := f.MetaUint(key("attention.shared_kv_layers")); ok && v < 1<<16 {
		c.KVShared = int(v)
	}
	if v, ok := f.MetaUint(key("embedding_length_per_layer_input")); ok && v < 1<<16 {
		c.PerLayer = int(v)
	}
	c.RopeThetaSWA = 10000
	if v, ok := f.MetaFloat(key("rope.freq_base_swa")); ok && v > 0 {
		c.RopeThetaSWA = float32(v)
	}
	c.VNorm = true
	c.AttnScale = 1 // llama.cpp: Gemma 4 scales neither queries nor scores
	if v, ok := f.MetaFloat(key("final_logit_softcapping")); ok {
		c.FinalSoftcap = float32(v)
	}
	c.gemmaNumerics()
	return c.checkShared()
}

// checkShared: a sharing layer must read a layer of its own kind and
// shape, at least two layers keep their own K and V (llama.cpp asserts it).
func (c Config) checkShared() error {
	if c.KVShared == 0 {
		return nil
	}
	if c.KVShared < 0 || c.Layers-c.KVShared < 2 {
		return fmt.Errorf("%w: %d of %d layers share K and V", ErrMalformed, c.KVShared, c.Layers)
	}
	for l := c.Layers - c.KVShared; l < c.Layers; l++ {
		s := c.KVSource(l)
		if c.Sliding(s) != c.Sliding(l) || c.At(s).KVDim() != c.At(l).KVDim() {
			return fmt.Errorf("%w: layer %d would share layer %d's K and V, of another kind or width", ErrMalformed, l, s)
		}
	}
	return nil
}

// gemma4Layer loads what a Gemma 4 block adds (its K and V, optional,
// are layer's): the per-layer embedding's gate, projection and norm, and
// the output scale.
func (l *ggufLoader) gemma4Layer(c Config, i int, L *Layer) {
	blk := func(p string) string { return fmt.Sprintf(p, i) }
	if c.PerLayer > 0 {
		L.PLEGate = l.matrix(blk("blk.%d.inp_gate.weight"), c.PerLayer, c.Dim)
		L.PLEProj = l.matrix(blk("blk.%d.proj.weight"), c.Dim, c.PerLayer)
		L.PLENorm = l.vector(blk("blk.%d.post_norm.weight"), c.Dim)
	}
	if hasTensor(l.f, blk("blk.%d.layer_output_scale.weight")) {
		L.OutScale = l.vector(blk("blk.%d.layer_output_scale.weight"), 1)
	}
	if c.MoE.On() && hasTensor(l.f, blk("blk.%d.ffn_gate_inp.weight")) { // a dense block has no router
		l.gemma4Experts(c, i, L)
	}
}

// gemma4Experts loads a block's mixture (26B-A4B), which runs beside its
// dense FFN: the router and its input scale, the experts' gate and up
// (one fused tensor or two) and down, each expert's output scale, and
// the norms of the experts' input and of both outputs.
func (l *ggufLoader) gemma4Experts(c Config, i int, L *Layer) {
	blk := func(p string) string { return fmt.Sprintf(p, i) }
	m := c.MoE
	L.Router = l.matrix(blk("blk.%d.ffn_gate_inp.weight"), m.Experts, c.Dim)
	L.RouterScale = l.vector(blk("blk.%d.ffn_gate_inp.scale"), c.Dim)
	if name := blk("blk.%d.ffn_gate_up_exps.weight"); hasTensor(l.f, name) {
		for _, gu := range l.experts(name, m.Experts, 2*m.FFN, c.Dim) {
			L.ExpGate, L.ExpUp = append(L.ExpGate, gu.RowRange(0, m.FFN)), append(L.ExpUp, gu.RowRange(m.FFN, 2*m.FFN))
		}
	} else {
		L.ExpGate = l.experts(blk("blk.%d.ffn_gate_exps.weight"), m.Experts, m.FFN, c.Dim)
		L.ExpUp = l.experts(blk("blk.%d.ffn_up_exps.weight"), m.Experts, m.FFN, c.Dim)
	}
	L.ExpDown = l.experts(blk("blk.%d.ffn_down_exps.weight"), m.Experts, c.Dim, m.FFN)
	if name := blk("blk.%d.ffn_down_exps.scale"); hasTensor(l.f, name) {
		L.ExpDownScale = l.vector(name, m.Experts)
	}
	L.MoEInNorm = l.vector(blk("blk.%d.pre_ffw_norm_2.weight"), c.Dim)
	L.DenseOutNorm = l.vector(blk("blk.%d.post_ffw_norm_1.weight"), c.Dim)
	L.MoEOutNorm = l.vector(blk("blk.%d.post_ffw_norm_2.weight"), c.Dim)
}

// gemma4Model loads the per-layer embeddings' table, projection and norm.
func (l *ggufLoader) gemma4Model(m *Model) {
	c := m.Config
	if c.PerLayer == 0 {
		return
	}
	w := c.PerLayer * c.Layers
	m.PLE = l.matrix("per_layer_token_embd.weight", c.Vocab, w)
	m.PLEProj = l.matrix("per_layer_model_proj.weight", w, c.Dim)
	m.PLENorm = l.vector("per_layer_proj_norm.weight", c.PerLayer)
}

// metaInts reads a per-layer integer key: one value for every layer, or
// an array of n; def where the key is absent.
func metaInts(f *gguf.File, key string, n, def int) ([]int, bool) {
	if v, ok := f.MetaUint(key); ok || f.Meta[key] == nil {
		if ok {
			def = int(min(v, math.MaxInt32))
		}
		out := make([]int, n)
		for i := range out {
			out[i] = def
		}
		return out, true
	}
	out, ok := metaIntArray(f, key)
	return out, ok && len(out) == n
}

// metaIntArray reads an array of positive integers, of any length.
func metaIntArray(f *gguf.File, key string) ([]int, bool) {
	vals, ok := metaArray(f, key)
	if !ok {
		return nil, false
	}
	out := make([]int, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case int32:
			out[i] = int(x)
		case uint32:
			out[i] = int(min(x, math.MaxInt32))
		default:
			return nil, false
		}
		if out[i] <= 0 {
			return nil, false
		}
	}
	return out, true
}

// metaBools reads an array of n booleans.
func metaBools(f *gguf.File, key string, n int) ([]bool, bool) {
	vals, ok := metaArray(f, key)
	if !ok || len(vals) != n {
		return nil, false
	}
	out := make([]bool, n)
	for i, v := range vals {
		b, ok := v.(bool)
		if !ok {
			return nil, false
		}
		out[i] = b
	}
	return out, true
}

// metaArray is an array key's values, whatever their element type.
func metaArray(f *gguf.File, key string) ([]any, bool) {
	switch a := f.Meta[key].(type) {
	case []any:
		return a, true
	case []int32:
		vals := make([]any, len(a))
		for i, v := range a {
			vals[i] = v
		}
		return vals, true
	}
	return nil, false
}
