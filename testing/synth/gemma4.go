package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
)

// Gemma4Options shape a random-weight gemma4 file as llama.cpp v0.5.0's
// converter lays one out: Slide says which layers slide (Window
// positions), the sliding and full layers have their own head width and
// KV heads, the last KVShared layers have no K or V (and, with
// DoubleFFN, twice the FFN), full layers may have no V projection (KEqV)
// and rotate a quarter of their pairs (rope_freqs), PerLayer > 0 adds
// per-layer embeddings, and every block has an output scale. Experts > 0
// adds 26B-A4B's mixture beside every dense FFN (ExpertFFN wide, Used
// per token, gate and up in one tensor with FusedGateUp). Experts > 0
// adds 26B-A4B's mixture beside every dense FFN (ExpertFFN wide, Used
// per token, gate and up in one tensor with FusedGateUp).
type Gemma4Options struct {
	Dim, Layers, Heads, FFN, Vocab, Context, Window int
	HeadSWA, HeadFull, KVSWA, KVFull                int
	Slide                                           []bool
	KVShared, PerLayer                              int
	KEqV, DoubleFFN, FusedGateUp                    bool
	Experts, Used, ExpertFFN                        int
	Softcap                                         float32
	DType                                           quant.DType
	Seed                                            uint64
}

// WriteGemma4 writes o as GGUF.
func WriteGemma4(w io.Writer, o Gemma4Options) error {
	if len(o.Slide) != o.Layers || o.Layers-o.KVShared < 2 {
		return fmt.Errorf("synth: gemma4 needs %d slide flags and two layers with K and V", o.Layers)
	}
	const arch = "gemma4"
	pieces, scores, types := synthVocab(Options{Vocab: o.Vocab})
	gw := gguf.NewWriter()
	gw.Set("general.architecture", arch)
	gw.Set("general.name", fmt.Sprintf("batchd-synth-gemma4-d%d-l%d", o.Dim, o.Layers))
	gw.Set(arch+".context_length", uint32(o.Context))
	gw.Set(arch+".embedding_length", uint32(o.Dim))
	gw.Set(arch+".block_count", uint32(o.Layers))
	start := o.Layers - o.KVShared
	ffn := make([]int32, o.Layers)
	kv := make([]int32, o.Layers)
	for l := range o.Layers {
		ffn[l], kv[l] = int32(o.FFN), int32(o.KVFull)
		if o.DoubleFFN && l >= start {
			ffn[l] *= 2
		}
		if o.Slide[l] {
			kv[l] = int32(o.KVSWA)
		}
	}
	gw.Set(arch+".feed_forward_length", ffn)
	gw.Set(arch+".attention.head_count", uint32(o.Heads))
	gw.Set(arch+".attention.head_count_kv", kv)
	gw.Set(arch+".attention.layer_norm_rms_epsilon", float32(1e-6))
	gw.Set(arch+".attention.key_length", uint32(o.HeadFull))
	gw.Set(arch+".attention.value_length", uint32(o.HeadFull))
	gw.Set(arch+".attention.key_length_swa", uint32(o.HeadSWA))
	gw.Set(arch+".attention.value_length_swa", uint32(o.HeadSWA))
	gw.Set(arch+".rope.dimension_count", uint32(o.HeadFull))
	gw.Set(arch+".rope.dimension_count_swa", uint32(o.HeadSWA))
	gw.Set(arch+".rope.freq_base", float32(1e6))
	gw.Set(arch+".rope.freq_base_swa", float32(1e4))
	gw.Set(arch+".attention.sliding_window", uint32(o.Window))
	gw.Set(arch+".attention.sliding_window_pattern", o.Slide)
	gw.Set(arch+".attention.shared_kv_layers", uint32(o.KVShared))
	gw.Set(arch+".embedding_length_per_layer_input", uint32(o.PerLayer))
	if o.Experts > 0 {
		gw.Set(arch+".expert_count", uint32(o.Experts))
		gw.Set(arch+".expert_used_count", uint32(o.Used))
		gw.Set(arch+".expert_feed_forward_length", uint32(o.ExpertFFN))
	}
	if o.Softcap > 0 {
		gw.Set(arch+".final_logit_softcapping", o.Softcap)
	}
	gw.Set(arch+".vocab_size", uint32(o.Vocab))
	setVocab(gw, pieces, scores, types)

	rng := rand.New(rand.NewPCG(o.Seed, 0x67656d6d6134))
	const std = 0.02
	mat := func(name string, rows, cols int) {
		gw.AddTensor(name, gguf.Type(o.DType), []uint64{uint64(cols), uint64(rows)}, RandomMatrix(rng, o.DType, rows, cols, std))
	}
	f32 := func(name string, v []float32) {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		gw.AddTensor(name, gguf.Type(quant.F32), []uint64{uint64(len(v))}, b)
	}
	norm := func(name string, n int) { // around 1, so that a norm in the wrong place shows
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(1 + 0.3*rng.NormFloat64())
		}
		f32(name, v)
	}
	mat("token_embd.weight", o.Vocab, o.Dim)
	norm("output_norm.weight", o.Dim)
	// Proportional RoPE: the full layers rotate their first quarter of
	// pairs; the rest take a factor of 1e30, as the converter writes it.
	factors := make([]float32, o.HeadFull/2)
	for i := range factors {
		factors[i] = 1
		if i >= o.HeadFull/8 {
			factors[i] = 1e30
		}
	}
	f32("rope_freqs.weight", factors)
	if o.PerLayer > 0 {
		mat("per_layer_token_embd.weight", o.Vocab, o.Layers*o.PerLayer)
		mat("per_layer_model_proj.weight", o.Layers*o.PerLayer, o.Dim)
		norm("per_layer_proj_norm.weight", o.PerLayer)
	}
	for l := range o.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		hd, kvh := o.HeadFull, o.KVFull
		if o.Slide[l] {
			hd, kvh = o.HeadSWA, o.KVSWA
		}
		norm(p+"attn_norm.weight", o.Dim)
		mat(p+"attn_q.weight", o.Heads*hd, o.Dim)
		if l < start {
			mat(p+"attn_k.weight", kvh*hd, o.Dim)
			if o.Slide[l] || !o.KEqV {
				mat(p+"attn_v.weight", kvh*hd, o.Dim)
			}
			norm(p+"attn_k_norm.weight", hd)
		}
		norm(p+"attn_q_norm.weight", hd)
		mat(p+"attn_output.weight", o.Dim, o.Heads*hd)
		norm(p+"post_attention_norm.weight", o.Dim)
		norm(p+"ffn_norm.weight", o.Dim)
		mat(p+"ffn_gate.weight", int(ffn[l]), o.Dim)
		mat(p+"ffn_up.weight", int(ffn[l]), o.Dim)
		mat(p+"ffn_down.weight", o.Dim, int(ffn[l]))
		norm(p+"post_ffw_norm.weight", o.Dim)
		f32(p+"layer_output_scale.weight", []float32{float32(0.5 + rng.Float64())})
		if o.Experts > 0 {
			o.gemma4Experts(gw, rng, p, norm, f32)
		}
		if o.PerLayer > 0 {
			mat(p+"inp_gate.weight", o.PerLayer, o.Dim)
			mat(p+"proj.weight", o.Dim, o.PerLayer)
			norm(p+"post_norm.weight", o.Dim)
		}
	}
	_, err := gw.WriteTo(w)
	return err
}

// gemma4Experts writes one block's mixture: the router (F32, wider than
// the other weights, logits of about 2 apart, so that few tokens sit at
// near ties between experts)
// and its input scale, the experts, their output scales and the three
// norms around them.
func (o Gemma4Options) gemma4Experts(gw *gguf.Writer, rng *rand.Rand, p string, norm func(string, int), f32 func(string, []float32)) {
	gw.AddTensor(p+"ffn_gate_inp.weight", gguf.Type(quant.F32), []uint64{uint64(o.Dim), uint64(o.Experts)},
		RandomMatrix(rng, quant.F32, o.Experts, o.Dim, 2))
	norm(p+"ffn_gate_inp.scale", o.Dim)
	experts := func(name string, rows, cols int) {
		var b []byte
		for range o.Experts {
			b = append(b, RandomMatrix(rng, o.DType, rows, cols, 0.02)...)
		}
		gw.AddTensor(p+name, gguf.Type(o.DType), []uint64{uint64(cols), uint64(rows), uint64(o.Experts)}, b)
	}
	if o.FusedGateUp {
		experts("ffn_gate_up_exps.weight", 2*o.ExpertFFN, o.Dim)
	} else {
		experts("ffn_gate_exps.weight", o.ExpertFFN, o.Dim)
		experts("ffn_up_exps.weight", o.ExpertFFN, o.Dim)
	}
	experts("ffn_down_exps.weight", o.Dim, o.ExpertFFN)
	scales := make([]float32, o.Experts)
	for i := range scales {
		scales[i] = float32(0.5 + rng.Float64())
	}
	f32(p+"ffn_down_exps.scale", scales)
	norm(p+"pre_ffw_norm_2.weight", o.Dim)
	norm(p+"post_ffw_norm_1.weight", o.Dim)
	norm(p+"post_ffw_norm_2.weight", o.Dim)
}
