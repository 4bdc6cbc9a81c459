package model

import (
	"fmt"
	"sort"
	"strings"
)

// Arch describes one GGUF architecture (general.architecture): the names of
// its tensors and which optional parts it has. Adding a family is an entry
// in archTable plus, for a part no entry had before, a small hook in the
// loader (the tensor) and the backend (the arithmetic): not a new forward pass.
type Arch struct {
	Name string
	// Tensors names every tensor; per-block names take the block index.
	Tensors TensorNames
	// RopeNeoX rotates pairs (i, i+d/2) instead of adjacent ones (qwen2, phi3, gemma2).
	RopeNeoX bool
	// Optional parts.
	AttnBias    bool // Q, K and V biases (qwen2)
	QKNorm      bool // per-head RMS norms of Q and K (qwen3)
	FusedQKV    bool // one attn_qkv matrix, rows Q then K then V (phi3)
	FusedGateUp bool // ffn_up holds gate rows then up rows (phi3)
	PostNorms   bool // norms after attention and after the FFN (gemma2)
	// Gemma is gemma2's numerics: embeddings scaled by sqrt(dim), GELU,
	// soft-capped attention and logits, sliding window on even layers.
	Gemma bool
}

// TensorNames are an architecture's tensor names, as llama.cpp's converter
// writes them.
type TensorNames struct {
	TokenEmbd, OutputNorm, Output                 string
	AttnNorm, Q, K, V, O, FFNNorm, Gate, Up, Down string // fmt patterns with the block index
	QKV                                           string // fused Q, K, V (phi3)
	BiasQ, BiasK, BiasV, QNorm, KNorm             string
	PostAttnNorm, PostFFNNorm                     string
	RopeFreqs                                     string // Llama 3.1's rope scaling factors
}

// llamaTensors are the names llama-family GGUF files use.
var llamaTensors = TensorNames{
	TokenEmbd: "token_embd.weight", OutputNorm: "output_norm.weight", Output: "output.weight",
	AttnNorm: "blk.%d.attn_norm.weight", Q: "blk.%d.attn_q.weight", K: "blk.%d.attn_k.weight",
	V: "blk.%d.attn_v.weight", O: "blk.%d.attn_output.weight", FFNNorm: "blk.%d.ffn_norm.weight",
	Gate: "blk.%d.ffn_gate.weight", Up: "blk.%d.ffn_up.weight", Down: "blk.%d.ffn_down.weight",
	QKV:   "blk.%d.attn_qkv.weight",
	BiasQ: "blk.%d.attn_q.bias", BiasK: "blk.%d.attn_k.bias", BiasV: "blk.%d.attn_v.bias",
	QNorm: "blk.%d.attn_q_norm.weight", KNorm: "blk.%d.attn_k_norm.weight",
	PostAttnNorm: "blk.%d.post_attention_norm.weight", PostFFNNorm: "blk.%d.post_ffw_norm.weight",
	RopeFreqs: "rope_freqs.weight",
}

// archTable is every architecture batchd loads.
var archTable = map[string]Arch{
	"llama":   {Name: "llama", Tensors: llamaTensors},
	"mistral": {Name: "mistral", Tensors: llamaTensors},
	"qwen2":   {Name: "qwen2", Tensors: llamaTensors, RopeNeoX: true, AttnBias: true},
	"qwen3":   {Name: "qwen3", Tensors: llamaTensors, RopeNeoX: true, QKNorm: true},
	"phi3":    {Name: "phi3", Tensors: llamaTensors, RopeNeoX: true, FusedQKV: true, FusedGateUp: true},
	"gemma2":  {Name: "gemma2", Tensors: llamaTensors, RopeNeoX: true, PostNorms: true, Gemma: true},
}

// LookupArch returns the table entry for a GGUF architecture name.
func LookupArch(name string) (Arch, error) {
	a, ok := archTable[name]
	if !ok {
		return Arch{}, fmt.Errorf("%w: architecture %q (batchd runs %s)", ErrUnsupported, name, ArchNames())
	}
	return a, nil
}

// ArchNames lists the architectures batchd loads.
func ArchNames() string {
	var names []string
	for n := range archTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// blockTensors is how many tensors each block has at least.
func (a Arch) blockTensors() int {
	n := 9
	if a.FusedQKV {
		n -= 2
	}
	if a.FusedGateUp {
		n--
	}
	return n
}
