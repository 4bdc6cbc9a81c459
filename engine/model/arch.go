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
	// Optional parts. An entry that sets one the loader or backend cannot
	// run yet is refused by name (Unsupported), never loaded with wrong numerics.
	AttnBias    bool // Q, K and V biases (qwen2)
	QKNorm      bool // per-head RMS norms of Q and K (qwen3)
	FusedQKV    bool // one attn_qkv matrix (phi3)
	FusedGateUp bool // ffn_up holds gate and up (phi3)
	PostNorms   bool // norms after attention and after the FFN (gemma2)
}

// TensorNames are an architecture's tensor names, as llama.cpp's converter
// writes them.
type TensorNames struct {
	TokenEmbd, OutputNorm, Output                 string
	AttnNorm, Q, K, V, O, FFNNorm, Gate, Up, Down string // fmt patterns with the block index
	RopeFreqs                                     string // Llama 3.1's rope scaling factors
}

// llamaTensors are the names llama-family GGUF files use.
var llamaTensors = TensorNames{
	TokenEmbd: "token_embd.weight", OutputNorm: "output_norm.weight", Output: "output.weight",
	AttnNorm: "blk.%d.attn_norm.weight", Q: "blk.%d.attn_q.weight", K: "blk.%d.attn_k.weight",
	V: "blk.%d.attn_v.weight", O: "blk.%d.attn_output.weight", FFNNorm: "blk.%d.ffn_norm.weight",
	Gate: "blk.%d.ffn_gate.weight", Up: "blk.%d.ffn_up.weight", Down: "blk.%d.ffn_down.weight",
	RopeFreqs: "rope_freqs.weight",
}

// archTable is every architecture batchd loads.
var archTable = map[string]Arch{
	"llama":   {Name: "llama", Tensors: llamaTensors},
	"mistral": {Name: "mistral", Tensors: llamaTensors},
}

// LookupArch returns the table entry for a GGUF architecture name.
func LookupArch(name string) (Arch, error) {
	a, ok := archTable[name]
	if !ok {
		return Arch{}, fmt.Errorf("%w: architecture %q (batchd runs %s)", ErrUnsupported, name, ArchNames())
	}
	if parts := a.unimplemented(); len(parts) > 0 {
		return Arch{}, fmt.Errorf("%w: architecture %q needs %s, not implemented yet", ErrUnsupported, name,
			strings.Join(parts, ", "))
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

// unimplemented names the optional parts the loader and backend cannot run yet.
func (a Arch) unimplemented() []string {
	var out []string
	for _, p := range []struct {
		on   bool
		name string
	}{{a.AttnBias, "Q/K/V biases"}, {a.QKNorm, "Q/K norms"}, {a.FusedQKV, "a fused QKV matrix"},
		{a.FusedGateUp, "a fused gate/up matrix"}, {a.PostNorms, "post-attention/FFN norms"}} {
		if p.on {
			out = append(out, p.name)
		}
	}
	return out
}
