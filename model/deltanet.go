package model

import (
	"fmt"

	"github.com/batchd/batchd/gguf"
)

// Recurrent describes Gated DeltaNet linear-attention layers (qwen35,
// qwen35moe): every Interval-th layer is gated full attention, the others
// keep a constant-size state per sequence, as llama.cpp's graph runs them:
// a causal convolution of ConvKernel taps over the Q, K and V channels, Q
// and K L2-normalised per head, then the gated delta rule on a
// StateSize x StateSize matrix per value head.
type Recurrent struct {
	Interval   int // full_attention_interval: layer l is attention iff (l+1)%Interval == 0
	ConvKernel int // ssm.conv_kernel
	StateSize  int // ssm.state_size: a K head's width (and a V head's)
	KHeads     int // ssm.group_count: Q and K heads
	VHeads     int // ssm.time_step_rank: V heads (a multiple of KHeads)
	Inner      int // ssm.inner_size: VHeads x the V head width
}

// On says whether the model has recurrent layers.
func (r Recurrent) On() bool { return r.Interval > 0 }

// Layer reports whether layer l is recurrent.
func (r Recurrent) Layer(l int) bool { return r.On() && (l+1)%r.Interval != 0 }

// VDim is a V head's width.
func (r Recurrent) VDim() int { return r.Inner / r.VHeads }

// KeyDim is the Q (or K) channels' width: KHeads x StateSize.
func (r Recurrent) KeyDim() int { return r.KHeads * r.StateSize }

// ConvChannels are the convolved channels: Q, K then V.
func (r Recurrent) ConvChannels() int { return 2*r.KeyDim() + r.Inner }

// StateFloats is one sequence's state in one layer: the convolution's
// last ConvKernel-1 inputs and the delta rule's matrices.
func (r Recurrent) StateFloats() int {
	return (r.ConvKernel-1)*r.ConvChannels() + r.VHeads*r.VDim()*r.VDim()
}

// AttnLayers are the layers that keep K and V: all but the recurrent ones
// and those that read another layer's (gemma4).
func (c Config) AttnLayers() int {
	n := 0
	for l := range c.Layers {
		if !c.Recurrent.Layer(l) && c.KVSource(l) == l {
			n++
		}
	}
	return n
}

// StateBytes is one sequence's recurrent state over every layer (float32).
func (c Config) StateBytes() int64 {
	if !c.Recurrent.On() {
		return 0
	}
	return int64(c.Layers-c.AttnLayers()) * int64(c.Recurrent.StateFloats()) * 4
}

// qRows is the Q projection's height: with GatedQ, each head's query
// then its gate.
func (c Config) qRows() int {
	if c.GatedQ {
		return 2 * c.QDim()
	}
	return c.QDim()
}

// DeltaNet are a recurrent layer's weights.
type DeltaNet struct {
	QKV   *Matrix   // ConvChannels x Dim: Q, K, V before the convolution
	Gate  *Matrix   // Inner x Dim: z, the output gate
	Conv  []float32 // ConvChannels x ConvKernel taps, row-major
	DtB   []float32 // VHeads: the decay's bias
	A     []float32 // VHeads: -exp(A_log)
	Beta  *Matrix   // VHeads x Dim
	Alpha *Matrix   // VHeads x Dim
	Norm  []float32 // a V head's RMS norm
	Out   *Matrix   // Dim x Inner
}

// recurrentConfig reads the DeltaNet keys (arch.DeltaNet).
func recurrentConfig(f *gguf.File, c *Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	r := Recurrent{Interval: 4}
	for _, k := range []struct {
		name string
		dst  *int
	}{{"ssm.conv_kernel", &r.ConvKernel}, {"ssm.state_size", &r.StateSize}, {"ssm.group_count", &r.KHeads},
		{"ssm.time_step_rank", &r.VHeads}, {"ssm.inner_size", &r.Inner}} {
		v, ok := f.MetaUint(key(k.name))
		if !ok || v == 0 || v > 1<<16 {
			return fmt.Errorf("%w: metadata %s missing or out of range", ErrMalformed, key(k.name))
		}
		*k.dst = int(v)
	}
	if v, ok := f.MetaUint(key("full_attention_interval")); ok {
		if v == 0 || v > 1<<16 {
			return fmt.Errorf("%w: full_attention_interval %d", ErrMalformed, v)
		}
		r.Interval = int(v)
	}
	if _, ok := f.Meta[key("attention.recurrent_layers")]; ok {
		return fmt.Errorf("%w: a per-layer attention.recurrent_layers list", ErrUnsupported)
	}
	if r.VHeads%r.KHeads != 0 || r.Inner%r.VHeads != 0 || r.VDim() != r.StateSize {
		return fmt.Errorf("%w: DeltaNet heads: %d K heads of %d, %d V heads, inner %d", ErrShape, r.KHeads, r.StateSize, r.VHeads, r.Inner)
	}
	// M-RoPE sections only split a position among text, height and width;
	// batchd serves text, whose three positions are one.
	c.Recurrent, c.GatedQ = r, true
	return nil
}

// deltaNetLayer loads recurrent block i.
func (l *ggufLoader) deltaNetLayer(c Config, i int, L *Layer) {
	r := c.Recurrent
	blk := func(name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	conv := l.matrix(blk("ssm_conv1d.weight"), r.ConvChannels(), r.ConvKernel)
	d := &DeltaNet{
		QKV:   l.matrix(blk("attn_qkv.weight"), r.ConvChannels(), c.Dim),
		Gate:  l.matrix(blk("attn_gate.weight"), r.Inner, c.Dim),
		DtB:   l.vector(blk("ssm_dt.bias"), r.VHeads),
		A:     l.vector(blk("ssm_a"), r.VHeads),
		Beta:  l.matrix(blk("ssm_beta.weight"), r.VHeads, c.Dim),
		Alpha: l.matrix(blk("ssm_alpha.weight"), r.VHeads, c.Dim),
		Norm:  l.vector(blk("ssm_norm.weight"), r.VDim()),
		Out:   l.matrix(blk("ssm_out.weight"), c.Dim, r.Inner),
	}
	if conv.Rows == r.ConvChannels() {
		d.Conv = make([]float32, r.ConvChannels()*r.ConvKernel)
		for ch := range r.ConvChannels() {
			conv.Row(ch, d.Conv[ch*r.ConvKernel:(ch+1)*r.ConvKernel])
		}
	}
	L.SSM = d
}

// checkDeltaNet checks a recurrent layer's shapes.
func checkDeltaNet(p string, L Layer, c Config) error {
	r, d := c.Recurrent, L.SSM
	if d == nil {
		return fmt.Errorf("%w: %sis recurrent but has no DeltaNet weights", ErrShape, p)
	}
	errs := []error{checkShape(p+"ssm qkv", d.QKV, r.ConvChannels(), c.Dim), checkShape(p+"ssm gate", d.Gate, r.Inner, c.Dim),
		checkShape(p+"ssm beta", d.Beta, r.VHeads, c.Dim), checkShape(p+"ssm alpha", d.Alpha, r.VHeads, c.Dim),
		checkShape(p+"ssm out", d.Out, c.Dim, r.Inner)}
	if len(d.Conv) != r.ConvChannels()*r.ConvKernel || len(d.DtB) != r.VHeads || len(d.A) != r.VHeads || len(d.Norm) != r.VDim() {
		errs = append(errs, fmt.Errorf("%w: %sDeltaNet vectors", ErrShape, p))
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
