package synth

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
)

// SSMOptions shape a Gated DeltaNet hybrid (Arch qwen35 or qwen35moe):
// every Interval-th layer is gated full attention, the others recurrent,
// as llama.cpp's converter writes Qwen3.5's files.
type SSMOptions struct {
	State, Groups, VHeads, ConvKernel, Interval int
	RopeDim                                     int // rotated dims of an attention head (0: a quarter)
}

// hybrid reports whether o writes a Gated DeltaNet hybrid.
func (o Options) hybrid() bool { return o.Arch == "qwen35" || o.Arch == "qwen35moe" }

func (o *Options) checkHybrid() error {
	s := &o.SSM
	if s.Interval == 0 {
		s.Interval = 4
	}
	if s.ConvKernel == 0 {
		s.ConvKernel = 4
	}
	if s.RopeDim == 0 {
		s.RopeDim = o.HeadDim / 4
	}
	if s.State <= 0 || s.Groups <= 0 || s.VHeads%max(s.Groups, 1) != 0 || s.RopeDim%8 != 0 {
		return fmt.Errorf("synth: DeltaNet: state %d, groups %d, v heads %d, rope dim %d", s.State, s.Groups, s.VHeads, s.RopeDim)
	}
	return nil
}

// hybridMeta writes the hybrid's keys.
func (o Options) hybridMeta(gw *gguf.Writer, arch string) {
	s := o.SSM
	gw.Set(arch+".ssm.conv_kernel", uint32(s.ConvKernel))
	gw.Set(arch+".ssm.state_size", uint32(s.State))
	gw.Set(arch+".ssm.group_count", uint32(s.Groups))
	gw.Set(arch+".ssm.time_step_rank", uint32(s.VHeads))
	gw.Set(arch+".ssm.inner_size", uint32(s.VHeads*s.State))
	gw.Set(arch+".full_attention_interval", uint32(s.Interval))
	gw.Set(arch+".rope.dimension_count", uint32(s.RopeDim))
	// M-RoPE's text, height and width sections, in Qwen3.5's proportions.
	q := s.RopeDim / 8
	gw.Set(arch+".rope.dimension_sections", []int32{int32(3 * q), int32(3 * q), int32(2 * q), 0})
	gw.Set(arch+".rope.freq_base", float32(1e7))
}

// hybridAttn writes layer i's attention part: a recurrent layer's
// DeltaNet weights, or the gated attention's Q (query and gate per head),
// K, V, their norms and the output.
func (o Options) hybridAttn(gw *gguf.Writer, rng *rand.Rand, i int, mat func(string, int, int), ones func(string, int)) {
	s, p := o.SSM, fmt.Sprintf("blk.%d.", i)
	if (i+1)%s.Interval == 0 {
		qd, kv := o.HeadDim*o.Heads, o.HeadDim*o.KVHeads
		mat(p+"attn_q.weight", 2*qd, o.Dim)
		mat(p+"attn_k.weight", kv, o.Dim)
		mat(p+"attn_v.weight", kv, o.Dim)
		mat(p+"attn_output.weight", o.Dim, qd)
		ones(p+"attn_q_norm.weight", o.HeadDim)
		ones(p+"attn_k_norm.weight", o.HeadDim)
		return
	}
	inner, channels := s.VHeads*s.State, 2*s.Groups*s.State+s.VHeads*s.State
	mat(p+"attn_qkv.weight", channels, o.Dim)
	mat(p+"attn_gate.weight", inner, o.Dim)
	mat(p+"ssm_beta.weight", s.VHeads, o.Dim)
	mat(p+"ssm_alpha.weight", s.VHeads, o.Dim)
	mat(p+"ssm_out.weight", o.Dim, inner)
	ones(p+"ssm_norm.weight", s.State)
	f32 := func(name string, dims []uint64, v []float32) {
		b := make([]byte, 4*len(v))
		for j, x := range v {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
		}
		gw.AddTensor(name, gguf.Type(quant.F32), dims, b)
	}
	conv := make([]float32, channels*s.ConvKernel)
	for j := range conv {
		conv[j] = float32(rng.NormFloat64() / math.Sqrt(float64(s.ConvKernel)))
	}
	dtB, a := make([]float32, s.VHeads), make([]float32, s.VHeads)
	for h := range s.VHeads {
		dt := math.Exp(math.Log(1e-3) + rng.Float64()*(math.Log(0.1)-math.Log(1e-3))) // log-uniform in [1e-3, 0.1]
		dtB[h] = float32(dt + math.Log(-math.Expm1(-dt)))                             // softplus's inverse
		a[h] = -float32(math.Exp(rng.Float64() * math.Log(16)))                       // -exp(A_log), A_log in [0, ln 16]
	}
	f32(p+"ssm_conv1d.weight", []uint64{uint64(s.ConvKernel), uint64(channels)}, conv)
	f32(p+"ssm_dt.bias", []uint64{uint64(s.VHeads)}, dtB)
	f32(p+"ssm_a", []uint64{uint64(s.VHeads)}, a)
}
