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
	// Window: the file's attention.sliding_window applies, as llama.cpp
	// applies it (gemma2); llama.cpp v0.5.0 ignores phi3's (its PR 13676),
	// and so does batchd.
	Window bool
	// Encoder is BERT's block: LayerNorms with biases after the attention
	// and FFN residual adds (AttnNorm, FFNNorm name those), a LayerNorm of
	// the embeddings, a token-type row added to every token, bidirectional
	// attention unless the file says causal, and no classifier: it embeds.
	Encoder   bool
	PosEmbd   bool // learned absolute positions instead of RoPE (bert)
	DenseBias bool // attn_output, ffn_up and ffn_down biases (bert)
	PlainFFN  bool // ffn_down(gelu(ffn_up x)): no gate (bert)
	// Mixtures of experts (moe.go): how a file's experts are sized
	// (moeNone refuses them), whether a file must have them, whether the
	// chosen weights are renormalised, and the gating, as the family's
	// llama.cpp graph hard-codes them.
	Experts    int
	MoEOnly    bool
	ExpertNorm bool
	Gating     Gating
	// Granite: the file's multipliers (logit_scale, required; residual,
	// embedding and attention scales), and a shared expert only where
	// expert_shared_feed_forward_length says, ungated.
	Granite bool
	// gpt-oss: attention sinks (a learned logit per head that joins each
	// softmax's denominator), the attention output's bias, biases on the
	// router and every expert, the clamped SwiGLU (MoE.OAI), and sliding
	// windows on the even layers (llama.cpp's default pattern 2).
	Sinks, OutBias, ExpertBias, OAISwiGLU bool
	// SlidePattern is llama.cpp's default window pattern for the family
	// when the file has no attention.sliding_window_pattern (model.Config).
	SlidePattern int
	// Gemma3: gemma2's numerics but no attention softcap, per-head Q and K
	// norms, and sliding layers with their own RoPE base (rope.freq_base_swa,
	// default 10000) and no scaling.
	Gemma3 bool
	// SharedExpert: every block has a shared expert, feed_forward_length
	// wide unless expert_shared_feed_forward_length says (qwen2moe).
	SharedExpert bool
	// QKNormFull: Q and K are RMS-normalised over their whole width, not
	// per head (olmoe).
	QKNormFull bool
	// DeltaNet: Gated DeltaNet recurrent layers between gated full-attention
	// ones (qwen35, qwen35moe; model.Recurrent), the attention layers'
	// Q projection also giving each head's output gate.
	DeltaNet bool
	// Rank: with rank pooling (a reranker) the file may carry llama.cpp's
	// classification head (cls, cls.output); RankLast reads the last
	// token's state and ends in a softmax (Qwen3-Reranker's yes/no), the
	// others the first token's ([CLS]).
	Rank, RankLast bool
	// Bidirectional: the family always attends both ways (llama.cpp sets
	// causal_attn false whatever the file says) and embeds: gemma-embedding,
	// whose sliding layers see a symmetric window (SymWindow) and whose
	// pooled vector may go through dense_2 and dense_3 (EmbedDense).
	Bidirectional, SymWindow, EmbedDense bool
	// Gemma4: Gemma 3's block with per-layer shapes, K and V shared from
	// earlier layers, per-layer embeddings, V normalised and optionally
	// K's projection, proportional RoPE on the full layers, an output
	// scale per block (gemma4.go).
	Gemma4 bool
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
	// Encoders: learned positions, token types, the embeddings' norm and
	// the dense biases. A LayerNorm's bias is its weight's name with .bias.
	PosEmbd, TokenTypes, EmbedNorm string
	BiasO, BiasUp, BiasDown        string
	// Mixtures of experts: the router, the experts' 3-D tensors, the
	// shared expert and its gate.
	Router, ExpGate, ExpUp, ExpDown string
	ShGate, ShUp, ShDown, ShGateInp string
	// gpt-oss: the sinks, the router's bias and the experts' (2-D: a row
	// per expert).
	Sinks, RouterB, ExpGateB, ExpUpB, ExpDownB string
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
	Router:    "blk.%d.ffn_gate_inp.weight", ExpGate: "blk.%d.ffn_gate_exps.weight", ExpUp: "blk.%d.ffn_up_exps.weight",
	ExpDown: "blk.%d.ffn_down_exps.weight", ShGate: "blk.%d.ffn_gate_shexp.weight", ShUp: "blk.%d.ffn_up_shexp.weight",
	ShDown: "blk.%d.ffn_down_shexp.weight", ShGateInp: "blk.%d.ffn_gate_inp_shexp.weight",
}

// gptOssTensors: gpt-oss names its pre-FFN norm post_attention_norm.
var gptOssTensors = func() TensorNames {
	t := llamaTensors
	t.FFNNorm, t.BiasO, t.Sinks = "blk.%d.post_attention_norm.weight", "blk.%d.attn_output.bias", "blk.%d.attn_sinks.weight"
	t.RouterB, t.ExpGateB = "blk.%d.ffn_gate_inp.bias", "blk.%d.ffn_gate_exps.bias"
	t.ExpUpB, t.ExpDownB = "blk.%d.ffn_up_exps.bias", "blk.%d.ffn_down_exps.bias"
	return t
}()

// qwen35Tensors: Qwen3.5 names its pre-FFN norm post_attention_norm.
var qwen35Tensors = func() TensorNames {
	t := llamaTensors
	t.FFNNorm = "blk.%d.post_attention_norm.weight"
	return t
}()

// bertTensors are the names BERT-family GGUF files use: the post-norm
// block's norms follow the attention (attn_output_norm) and the FFN
// (layer_output_norm).
var bertTensors = func() TensorNames {
	t := llamaTensors
	t.OutputNorm, t.Output = "", ""
	t.AttnNorm, t.FFNNorm = "blk.%d.attn_output_norm.weight", "blk.%d.layer_output_norm.weight"
	t.PosEmbd, t.TokenTypes, t.EmbedNorm = "position_embd.weight", "token_types.weight", "token_embd_norm.weight"
	t.BiasO, t.BiasUp, t.BiasDown = "blk.%d.attn_output.bias", "blk.%d.ffn_up.bias", "blk.%d.ffn_down.bias"
	return t
}()

// archTable is every architecture batchd loads.
var archTable = map[string]Arch{
	"llama":   {Name: "llama", Tensors: llamaTensors, Experts: moeFFN, ExpertNorm: true}, // with experts: Mixtral
	"mistral": {Name: "mistral", Tensors: llamaTensors},
	"qwen2":   {Name: "qwen2", Tensors: llamaTensors, RopeNeoX: true, AttnBias: true},
	"qwen3":   {Name: "qwen3", Tensors: llamaTensors, RopeNeoX: true, QKNorm: true, Rank: true, RankLast: true},
	"qwen2moe": {Name: "qwen2moe", Tensors: llamaTensors, RopeNeoX: true, AttnBias: true, Experts: moeSplitFFN, MoEOnly: true,
		SharedExpert: true},
	"qwen3moe": {Name: "qwen3moe", Tensors: llamaTensors, RopeNeoX: true, QKNorm: true, Experts: moeSplitFFN, MoEOnly: true,
		ExpertNorm: true},
	"olmoe":   {Name: "olmoe", Tensors: llamaTensors, RopeNeoX: true, QKNorm: true, QKNormFull: true, Experts: moeFFN, MoEOnly: true},
	"granite": {Name: "granite", Tensors: llamaTensors, Granite: true, Experts: moeFFN, ExpertNorm: true},
	"granitemoe": {Name: "granitemoe", Tensors: llamaTensors, Granite: true, Experts: moeFFN, MoEOnly: true,
		ExpertNorm: true},
	"gpt-oss": {Name: "gpt-oss", Tensors: gptOssTensors, RopeNeoX: true, AttnBias: true, Window: true, Experts: moeSplitFFN,
		MoEOnly: true, Gating: GatingSoftmaxTopK, Sinks: true, OutBias: true, ExpertBias: true, OAISwiGLU: true, SlidePattern: 2},
	"qwen35": {Name: "qwen35", Tensors: qwen35Tensors, RopeNeoX: true, QKNorm: true, DeltaNet: true},
	"qwen35moe": {Name: "qwen35moe", Tensors: qwen35Tensors, RopeNeoX: true, QKNorm: true, DeltaNet: true, Experts: moeSplitFFN,
		MoEOnly: true, ExpertNorm: true, SharedExpert: true},
	"phi3":   {Name: "phi3", Tensors: llamaTensors, RopeNeoX: true, FusedQKV: true, FusedGateUp: true},
	"gemma2": {Name: "gemma2", Tensors: llamaTensors, RopeNeoX: true, PostNorms: true, Gemma: true, Window: true, SlidePattern: 2},
	"gemma3": {Name: "gemma3", Tensors: llamaTensors, RopeNeoX: true, PostNorms: true, Gemma: true, Gemma3: true, Window: true,
		SlidePattern: 6, QKNorm: true},
	"gemma4": {Name: "gemma4", Tensors: llamaTensors, RopeNeoX: true, PostNorms: true, Gemma: true, Gemma4: true, Window: true,
		QKNorm: true, Experts: moeSplitFFN, ExpertNorm: true},
	// EmbeddingGemma: gemma3's block, bidirectional, windows of half the
	// file's either side.
	"gemma-embedding": {Name: "gemma-embedding", Tensors: llamaTensors, RopeNeoX: true, PostNorms: true, Gemma: true,
		Gemma3: true, Window: true, SlidePattern: 6, QKNorm: true, Bidirectional: true, SymWindow: true, EmbedDense: true},
	"bert": {Name: "bert", Tensors: bertTensors, Encoder: true, PosEmbd: true, AttnBias: true, DenseBias: true,
		PlainFFN: true, Rank: true},
	"nomic-bert": {Name: "nomic-bert", Tensors: bertTensors, Encoder: true, RopeNeoX: true, FusedQKV: true},
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
	if a.FusedGateUp || a.PlainFFN {
		n--
	}
	return n
}
