package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
)

// WriteEncoder writes a random-weight encoder GGUF, o.Arch "bert" (BGE,
// all-MiniLM: learned positions, biases, GELU FFN, CLS pooling) or
// "nomic-bert" (RoPE, fused QKV, SwiGLU, mean pooling), with the tensor
// names and keys llama.cpp's converter writes, for benchmarks of a
// realistic shape. Its vocabulary (the tokenizer.* keys) is copied from
// vocab, a WordPiece GGUF such as llama.cpp's ggml-vocab-bert-bge.gguf.
func WriteEncoder(w io.Writer, o Options, vocab *gguf.File) error {
	if o.Std == 0 {
		o.Std = 0.02
	}
	pieces, ok := vocab.Meta["tokenizer.ggml.tokens"].([]string)
	if !ok || o.Arch != "bert" && o.Arch != "nomic-bert" || o.Heads <= 0 || o.Dim%o.Heads != 0 {
		return fmt.Errorf("synth: an encoder needs arch bert or nomic-bert (not %q), heads dividing dim, and a vocabulary", o.Arch)
	}
	if f := quant.Lookup(o.DType); f == nil || f.Quantize == nil || o.Dim%f.BlockElems != 0 || o.FFN%f.BlockElems != 0 {
		return fmt.Errorf("synth: cannot write %s matrices of dim %d, ffn %d", o.DType, o.Dim, o.FFN)
	}
	arch, gw := o.Arch, gguf.NewWriter()
	gw.Set("general.architecture", arch)
	gw.Set("general.name", fmt.Sprintf("batchd-synth-%s-d%d-l%d-%s", arch, o.Dim, o.Layers, strings.ToLower(o.DType.String())))
	for k, v := range map[string]uint32{"context_length": uint32(o.Context), "embedding_length": uint32(o.Dim),
		"block_count": uint32(o.Layers), "feed_forward_length": uint32(o.FFN), "attention.head_count": uint32(o.Heads),
		"pooling_type": map[string]uint32{"bert": 2, "nomic-bert": 1}[arch]} {
		gw.Set(arch+"."+k, v)
	}
	gw.Set(arch+".attention.layer_norm_epsilon", float32(1e-12))
	gw.Set(arch+".attention.causal", false)
	if arch == "nomic-bert" {
		gw.Set(arch+".rope.freq_base", float32(1000))
	}
	gw.Set("tokenizer.ggml.token_type_count", uint32(2))
	for _, k := range vocab.SortedKeys() {
		if strings.HasPrefix(k, "tokenizer.") {
			switch v := vocab.Meta[k].(type) {
			case string, bool, uint32, int32, []string, []float32, []int32:
				gw.Set(k, v)
			}
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x62657274))
	mat := func(name string, t quant.DType, rows, cols int) {
		gw.AddTensor(name, gguf.Type(t), []uint64{uint64(cols), uint64(rows)}, RandomMatrix(rng, t, rows, cols, o.Std))
	}
	norm := func(name string, n int) { // weight 1, bias 0
		b := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1))
		}
		gw.AddTensor(name+".weight", gguf.Type(quant.F32), []uint64{uint64(n)}, b)
		gw.AddTensor(name+".bias", gguf.Type(quant.F32), []uint64{uint64(n)}, make([]byte, 4*n))
	}
	bias := func(name string, n int) {
		gw.AddTensor(name, gguf.Type(quant.F32), []uint64{uint64(n)}, RandomMatrix(rng, quant.F32, 1, n, o.Std))
	}
	mat("token_embd.weight", quant.F16, len(pieces), o.Dim)
	if arch == "bert" {
		mat("position_embd.weight", quant.F32, o.Context, o.Dim)
	}
	mat("token_types.weight", quant.F32, 2, o.Dim)
	norm("token_embd_norm", o.Dim)
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		if arch == "bert" {
			for _, m := range []string{"attn_q", "attn_k", "attn_v"} {
				mat(p+m+".weight", o.DType, o.Dim, o.Dim)
				bias(p+m+".bias", o.Dim)
			}
		} else {
			mat(p+"attn_qkv.weight", o.DType, 3*o.Dim, o.Dim)
		}
		mat(p+"attn_output.weight", o.DType, o.Dim, o.Dim)
		norm(p+"attn_output_norm", o.Dim)
		mat(p+"ffn_up.weight", o.DType, o.FFN, o.Dim)
		if arch == "bert" {
			bias(p+"ffn_up.bias", o.FFN)
		} else {
			mat(p+"ffn_gate.weight", o.DType, o.FFN, o.Dim)
		}
		mat(p+"ffn_down.weight", o.DType, o.Dim, o.FFN)
		if arch == "bert" {
			bias(p+"attn_output.bias", o.Dim)
			bias(p+"ffn_down.bias", o.Dim)
		}
		norm(p+"layer_output_norm", o.Dim)
	}
	_, err := gw.WriteTo(w)
	return err
}
