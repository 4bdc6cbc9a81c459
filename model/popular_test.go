package model

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/tokenizer"
)

// popular describes a GGUF file people download: its metadata and tensor
// directory as llama.cpp's converter and llama-quantize (Q4_K_M) write them.
type popular struct {
	name, arch, vocab, pre  string
	vocabSize               int
	dim, layers, heads, kv  int
	headDim, ffn, ctx       int
	ropeBase                float32
	tied, bias, qkNorm      bool
	fused, gemma, ropeFreqs bool
	extra                   map[string]any
}

var popularModels = []popular{
	{name: "Llama-3.2-1B-Instruct", arch: "llama", vocab: "ggml-vocab-llama-bpe.gguf", vocabSize: 128256,
		dim: 2048, layers: 16, heads: 32, kv: 8, headDim: 64, ffn: 8192, ctx: 131072, ropeBase: 500000, tied: true, ropeFreqs: true},
	{name: "Qwen2.5-0.5B-Instruct", arch: "qwen2", vocab: "ggml-vocab-qwen2.gguf", vocabSize: 151936,
		dim: 896, layers: 24, heads: 14, kv: 2, headDim: 64, ffn: 4864, ctx: 32768, ropeBase: 1e6, tied: true, bias: true},
	{name: "Qwen3-0.6B", arch: "qwen3", vocab: "ggml-vocab-qwen2.gguf", vocabSize: 151936,
		dim: 1024, layers: 28, heads: 16, kv: 8, headDim: 128, ffn: 3072, ctx: 40960, ropeBase: 1e6, tied: true, qkNorm: true},
	{name: "SmolLM2-360M-Instruct", arch: "llama", vocab: "ggml-vocab-gpt-2.gguf", pre: "smollm", vocabSize: 49152,
		dim: 960, layers: 32, heads: 15, kv: 5, headDim: 64, ffn: 2560, ctx: 8192, ropeBase: 100000, tied: true},
	{name: "Phi-3-mini-4k-instruct", arch: "phi3", vocab: "ggml-vocab-phi-3.gguf", vocabSize: 32064,
		dim: 3072, layers: 32, heads: 32, kv: 32, headDim: 96, ffn: 8192, ctx: 4096, ropeBase: 10000, fused: true,
		extra: map[string]any{"phi3.attention.sliding_window": uint32(2047), "phi3.rope.scaling.original_context_length": uint32(4096)}},
	{name: "Mistral-7B-Instruct-v0.3", arch: "llama", vocab: "ggml-vocab-llama-spm.gguf", vocabSize: 32768,
		dim: 4096, layers: 32, heads: 32, kv: 8, headDim: 128, ffn: 14336, ctx: 32768, ropeBase: 1e6},
	{name: "gemma-2-2b-it", arch: "gemma2", vocab: "ggml-vocab-llama-spm.gguf", vocabSize: 256000,
		dim: 2304, layers: 26, heads: 8, kv: 4, headDim: 256, ffn: 9216, ctx: 8192, ropeBase: 10000, tied: true, gemma: true,
		extra: map[string]any{"gemma2.attn_logit_softcapping": float32(50), "gemma2.final_logit_softcapping": float32(30),
			"gemma2.attention.sliding_window": uint32(4096), "tokenizer.ggml.add_space_prefix": false}},
}

// q4km is llama-quantize's Q4_K_M choice for a tensor: Q6_K for the
// classifier, V and FFN down; Q4_K for the rest; Q5_0/Q8_0 where the row
// is not a multiple of 256 (its fallback); norms and biases F32.
func q4km(name string, cols int) quant.DType {
	six := name == "output.weight" || name == "token_embd.weight" || filepath.Ext(name) == ".weight" &&
		(strings.Contains(name, "attn_v") || strings.Contains(name, "ffn_down"))
	switch {
	case cols%256 != 0 && six:
		return quant.Q8_0
	case cols%256 != 0:
		return quant.Q5_0
	case six:
		return quant.Q6_K
	}
	return quant.Q4_K
}

// writePopular writes p's metadata and tensor directory with every tensor's
// data a hole: the file has a real model's size but takes no disk.
func writePopular(t *testing.T, p popular, dir string) string {
	t.Helper()
	vb, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "vocab", p.vocab))
	if err != nil {
		t.Skipf("vocab %s: %v", p.vocab, err)
	}
	vf, err := gguf.Parse(vb)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	w.Set("general.architecture", p.arch)
	w.Set("general.name", p.name)
	a := func(k string, v any) { w.Set(p.arch+"."+k, v) }
	a("context_length", uint32(p.ctx))
	a("embedding_length", uint32(p.dim))
	a("block_count", uint32(p.layers))
	a("feed_forward_length", uint32(p.ffn))
	a("attention.head_count", uint32(p.heads))
	a("attention.head_count_kv", uint32(p.kv))
	a("attention.key_length", uint32(p.headDim))
	a("attention.value_length", uint32(p.headDim))
	a("attention.layer_norm_rms_epsilon", float32(1e-6))
	a("rope.freq_base", p.ropeBase)
	a("rope.dimension_count", uint32(p.headDim))
	for k, v := range p.extra {
		w.Set(k, v)
	}
	copyVocab(w, vf, p)
	tensors := popularTensors(p)
	for _, tt := range tensors {
		rows := 1
		if len(tt.dims) == 2 {
			rows = int(tt.dims[1])
		}
		w.AddTensorHole(tt.name, gguf.Type(tt.typ), tt.dims, uint64(rows*tt.typ.RowBytes(int(tt.dims[0]))))
	}
	path := filepath.Join(dir, p.name+"-Q4_K_M.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := w.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	return path
}

// copyVocab copies the vocabulary file's tokenizer keys, padded (unused
// tokens) or cut to the model's vocabulary size.
func copyVocab(w *gguf.Writer, vf *gguf.File, p popular) {
	for _, k := range vf.SortedKeys() {
		if !strings.HasPrefix(k, "tokenizer.") {
			continue
		}
		switch v := vf.Meta[k].(type) {
		case uint32, string, float32, bool, []string, []float32, []int32:
			w.Set(k, v)
		}
	}
	if p.pre != "" {
		w.Set("tokenizer.ggml.pre", p.pre)
	}
	toks := vf.Meta["tokenizer.ggml.tokens"].([]string)
	scores, _ := vf.Meta["tokenizer.ggml.scores"].([]float32)
	types, _ := vf.Meta["tokenizer.ggml.token_type"].([]int32)
	if len(toks) > p.vocabSize {
		toks, types = toks[:p.vocabSize], types[:p.vocabSize]
		if scores != nil {
			scores = scores[:p.vocabSize]
		}
	}
	for i := len(toks); i < p.vocabSize; i++ {
		toks = append(toks, fmt.Sprintf("<unused%d>", i))
		types = append(types, 5)
		if scores != nil {
			scores = append(scores, 0)
		}
	}
	w.Set("tokenizer.ggml.tokens", toks)
	w.Set("tokenizer.ggml.token_type", types)
	if scores != nil {
		w.Set("tokenizer.ggml.scores", scores)
	}
}

type popularTensor struct {
	name string
	dims []uint64
	typ  quant.DType
}

func popularTensors(p popular) []popularTensor {
	var out []popularTensor
	mat := func(name string, rows, cols int) {
		out = append(out, popularTensor{name, []uint64{uint64(cols), uint64(rows)}, q4km(name, cols)})
	}
	vec := func(name string, n int) { out = append(out, popularTensor{name, []uint64{uint64(n)}, quant.F32}) }
	q, kv := p.heads*p.headDim, p.kv*p.headDim
	mat("token_embd.weight", p.vocabSize, p.dim)
	vec("output_norm.weight", p.dim)
	if !p.tied {
		mat("output.weight", p.vocabSize, p.dim)
	}
	if p.ropeFreqs {
		vec("rope_freqs.weight", p.headDim/2)
	}
	for i := range p.layers {
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
		vec(b("attn_norm.weight"), p.dim)
		vec(b("ffn_norm.weight"), p.dim)
		mat(b("attn_output.weight"), p.dim, q)
		mat(b("ffn_down.weight"), p.dim, p.ffn)
		if p.fused {
			mat(b("attn_qkv.weight"), q+2*kv, p.dim)
			mat(b("ffn_up.weight"), 2*p.ffn, p.dim)
			continue
		}
		mat(b("attn_q.weight"), q, p.dim)
		mat(b("attn_k.weight"), kv, p.dim)
		mat(b("attn_v.weight"), kv, p.dim)
		mat(b("ffn_gate.weight"), p.ffn, p.dim)
		mat(b("ffn_up.weight"), p.ffn, p.dim)
		if p.bias {
			vec(b("attn_q.bias"), q)
			vec(b("attn_k.bias"), kv)
			vec(b("attn_v.bias"), kv)
		}
		if p.qkNorm {
			vec(b("attn_q_norm.weight"), p.headDim)
			vec(b("attn_k_norm.weight"), p.headDim)
		}
		if p.gemma {
			vec(b("post_attention_norm.weight"), p.dim)
			vec(b("post_ffw_norm.weight"), p.dim)
		}
	}
	return out
}

// TestPopularModelsLoad writes a file with the metadata and tensor
// directory of each popular model's Q4_K_M GGUF (data left as a hole) and
// loads it: architecture, tokenizer, quantization mix, shapes and the KV
// shape all accepted.
func TestPopularModelsLoad(t *testing.T) {
	dir := t.TempDir()
	for _, p := range popularModels {
		t.Run(p.name, func(t *testing.T) {
			path := writePopular(t, p, dir)
			defer os.Remove(path)
			m, err := Load(path, LoadOptions{})
			if err != nil {
				t.Fatalf("%s does not load: %v", p.name, err)
			}
			defer m.Close()
			c := m.Config
			if c.HeadDim != p.headDim || c.KVDim() != p.kv*p.headDim || c.Context != p.ctx || c.Tied != p.tied {
				t.Fatalf("config %+v", c)
			}
			t.Logf("%s: loads (%s, %s vocabulary of %d, %.1f GiB, KV %d bytes/token in F16)", p.name, c.Arch,
				map[bool]string{true: "BPE", false: "SPM"}[m.Tokenizer.Kind() == tokenizer.BPE], m.Tokenizer.VocabSize(),
				float64(m.FileBytes())/(1<<30), 2*2*c.Layers*c.KVDim())
		})
	}
}
