package synth

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/tokenizer"
)

// Options describes a random-weight Llama to write as GGUF.
type Options struct {
	Dim, Layers, Heads, KVHeads, FFN, Vocab, Context int
	DType                                            quant.DType // the matrices' type (WritableNames); norms stay F32
	Seed                                             uint64      // same seed, same bytes
	Tied                                             bool        // no separate output matrix
	Std                                              float64     // weight standard deviation; default 0.02
	// Arch is general.architecture: "llama" (default) or "qwen2" (adds Q, K
	// and V biases; batchd runs it with NeoX RoPE), for benchmarks that put
	// the two side by side.
	Arch string
	// Mix, if "q4_k_m" or "q5_k_m", writes llama.cpp's mix of that name:
	// DType (Q4_K or Q5_K) for most matrices, Q6_K for the classifier and
	// for attn_v and ffn_down in the layers llama-quantize gives more bits.
	Mix string
	// Tokenizer supplies the vocabulary (its size must equal Vocab); nil
	// synthesizes one with byte fallback.
	Tokenizer *tokenizer.Tokenizer
	// HeadDim is each head's width (0: Dim/Heads); Qwen3's 32 heads of
	// 128 on a width of 2048 need it.
	HeadDim int
	// Experts > 0 writes a mixture of experts in place of every FFN, laid
	// out as llama.cpp's converter writes Arch's files: the router (F32,
	// as llama-quantize keeps it), 3-D expert tensors ExpertFFN wide,
	// ExpertsUsed chosen per token. Arch is one of qwen3moe (per-head Q
	// and K norms), qwen2moe (Q, K, V biases and a shared expert SharedFFN
	// wide behind a sigmoid gate), olmoe (Q and K norms over their whole
	// width), llama (Mixtral), granitemoe (optionally a shared expert,
	// ungated; these three size experts by feed_forward_length, which is
	// then ExpertFFN) or gpt-oss (MXFP4 experts whatever DType, sinks,
	// biases, windows of 128 on even layers, YaRN as gpt-oss-20b has it). Arch granite or granitemoe writes Granite 3's
	// multipliers (logits / 8, residual x 0.22, embeddings x 12, attention
	// scale 1/64).
	Experts, ExpertsUsed, ExpertFFN, SharedFFN int
	// RouterStd is the router's weight std (0: twice Std): a wider router
	// leaves fewer near ties between experts.
	RouterStd float64 // SSM shapes a Gated DeltaNet hybrid: Arch qwen35 (a dense FFN) or
	// qwen35moe (experts and a gated shared expert, SharedFFN wide).
	SSM SSMOptions
	// Gemma shapes Arch gemma3 or gemma-embedding (gemma.go).
	Gemma GemmaOptions
}

func (o *Options) check() error {
	if o.Heads <= 0 || o.KVHeads <= 0 || o.Dim%o.Heads != 0 || o.Heads%o.KVHeads != 0 {
		return fmt.Errorf("synth: dim %d, heads %d, kv heads %d do not divide", o.Dim, o.Heads, o.KVHeads)
	}
	f := quant.Lookup(o.DType)
	if f == nil || f.Quantize == nil {
		return fmt.Errorf("synth: cannot write dtype %s (writes %s)", o.DType, WritableNames())
	}
	if o.Dim%f.BlockElems != 0 || o.FFN%f.BlockElems != 0 || o.ExpertFFN%f.BlockElems != 0 {
		return fmt.Errorf("synth: %s needs dim and ffn widths that are multiples of %d", o.DType, f.BlockElems)
	}
	moeArch := map[string]bool{"qwen3moe": true, "qwen2moe": true, "olmoe": true, "llama": true, "": true,
		"granitemoe": true, "granite": true, "gpt-oss": true, "qwen35moe": true}[o.Arch]
	if o.Experts > 0 && (!moeArch || o.ExpertsUsed <= 0 || o.ExpertsUsed > o.Experts || o.ExpertFFN <= 0) {
		return fmt.Errorf("synth: %d experts (%d used, %d wide) need arch qwen3moe, qwen2moe, olmoe or llama", o.Experts,
			o.ExpertsUsed, o.ExpertFFN)
	}
	if o.Arch == "qwen2moe" && o.SharedFFN == 0 || o.SharedFFN > 0 && o.Arch != "qwen2moe" && o.Arch != "granitemoe" && o.Arch != "qwen35moe" ||
		o.SharedFFN%f.BlockElems != 0 {
		return fmt.Errorf("synth: a shared expert (%d wide) is qwen2moe's or granitemoe's, and every qwen2moe block has one",
			o.SharedFFN)
	}
	if want, ok := MixType(o.Mix); o.Mix != "" && (!ok || want != o.DType) {
		return fmt.Errorf("synth: mix %q is not one of q4_k_m (Q4_K) or q5_k_m (Q5_K) with its dtype", o.Mix)
	}
	if o.Tokenizer != nil && o.Tokenizer.VocabSize() != o.Vocab {
		return fmt.Errorf("synth: tokenizer has %d pieces, vocab is %d", o.Tokenizer.VocabSize(), o.Vocab)
	}
	if o.Tokenizer == nil && o.Vocab < 259+1 {
		return fmt.Errorf("synth: a synthesized vocab needs at least 260 pieces, got %d", o.Vocab)
	}
	// The loader checks the rest (model.Config.Validate) when the file is read;
	// this package stays free of the model so that the model's tests can use it.
	for _, v := range []int{o.Dim, o.FFN, o.Layers, o.Vocab, o.Context} {
		if v <= 0 || v > 1<<24 {
			return fmt.Errorf("synth: dims %d/%d/%d/%d/%d out of range", o.Dim, o.FFN, o.Layers, o.Vocab, o.Context)
		}
	}
	return nil
}

// Write writes a deterministic random-weight Llama GGUF (weights normal
// with std 0.02, norms 1.0) that llama.cpp and batchd both load.
func Write(w io.Writer, o Options) error {
	if o.Std == 0 {
		o.Std = 0.02
	}
	if err := o.check(); err != nil {
		return err
	}
	if o.HeadDim == 0 {
		o.HeadDim = o.Dim / o.Heads
	}
	if o.hybrid() {
		if err := o.checkHybrid(); err != nil {
			return err
		}
	}
	if o.gemma() {
		if err := o.checkGemma(); err != nil {
			return err
		}
	}
	pieces, scores, types := synthVocab(o)
	gw := gguf.NewWriter()
	// general.file_type (llama.cpp's LLAMA_FTYPE_ALL_*), for tools that read it.
	// A single-type K-quant file is named as its _S mix.
	fileType := map[string]uint32{"q4_k_m": 15, "q5_k_m": 17}[o.Mix]
	if o.Mix == "" {
		fileType = map[quant.DType]uint32{quant.F32: 0, quant.F16: 1, quant.Q4_0: 2, quant.Q4_1: 3, quant.Q8_0: 7,
			quant.Q5_0: 8, quant.Q5_1: 9, quant.Q2_K: 10, quant.Q3_K: 11, quant.Q4_K: 14, quant.Q5_K: 16, quant.Q6_K: 18,
			quant.IQ4_NL: 25, quant.IQ4_XS: 30, quant.BF16: 32}[o.DType]
	}
	arch := o.Arch
	if arch == "" {
		arch = "llama"
	}
	gw.Set("general.architecture", arch)
	gw.Set("general.name", fmt.Sprintf("batchd-synth-d%d-l%d-%s", o.Dim, o.Layers, strings.ToLower(o.DType.String())))
	gw.Set("general.file_type", fileType)
	gw.Set(arch+".context_length", uint32(o.Context))
	gw.Set(arch+".embedding_length", uint32(o.Dim))
	gw.Set(arch+".block_count", uint32(o.Layers))
	ffn := o.FFN
	if o.Experts > 0 && arch != "qwen3moe" && arch != "qwen2moe" && arch != "gpt-oss" && arch != "qwen35moe" { // experts sized by feed_forward_length
		ffn = o.ExpertFFN
	}
	gw.Set(arch+".feed_forward_length", uint32(ffn))
	gw.Set(arch+".attention.head_count", uint32(o.Heads))
	gw.Set(arch+".attention.head_count_kv", uint32(o.KVHeads))
	gw.Set(arch+".attention.layer_norm_rms_epsilon", float32(1e-5))
	gw.Set(arch+".rope.dimension_count", uint32(o.HeadDim))
	gw.Set(arch+".attention.key_length", uint32(o.HeadDim))
	gw.Set(arch+".attention.value_length", uint32(o.HeadDim))
	if o.Experts > 0 {
		gw.Set(arch+".expert_count", uint32(o.Experts))
		gw.Set(arch+".expert_used_count", uint32(o.ExpertsUsed))
		if arch == "qwen3moe" || arch == "qwen2moe" || arch == "gpt-oss" || arch == "qwen35moe" {
			gw.Set(arch+".expert_feed_forward_length", uint32(o.ExpertFFN))
		}
		if o.SharedFFN > 0 {
			gw.Set(arch+".expert_shared_feed_forward_length", uint32(o.SharedFFN))
		}
	}
	if arch == "gpt-oss" { // gpt-oss-20b's: windows of 128, YaRN x32 from 4096, base 150000
		gw.Set(arch+".rope.freq_base", float32(150000))
		gw.Set(arch+".attention.sliding_window", uint32(128))
		gw.Set(arch+".rope.scaling.type", "yarn")
		gw.Set(arch+".rope.scaling.factor", float32(32))
		gw.Set(arch+".rope.scaling.original_context_length", uint32(4096))
	} else {
		gw.Set(arch+".rope.freq_base", float32(10000))
	}
	if o.hybrid() {
		o.hybridMeta(gw, arch)
	}
	if o.gemma() {
		o.gemmaMeta(gw, arch)
	}
	if strings.HasPrefix(arch, "granite") {
		gw.Set(arch+".logit_scale", float32(8))
		gw.Set(arch+".residual_scale", float32(0.22))
		gw.Set(arch+".embedding_scale", float32(12))
		gw.Set(arch+".attention.scale", float32(0.015625))
	}
	gw.Set(arch+".vocab_size", uint32(o.Vocab))
	setVocab(gw, pieces, scores, types)

	rng := rand.New(rand.NewPCG(o.Seed, 0x6261746368640a))
	kv, qd := o.HeadDim*o.KVHeads, o.HeadDim*o.Heads
	mat := func(name string, rows, cols int) {
		dt := o.tensorType(name)
		gw.AddTensor(name, gguf.Type(dt), []uint64{uint64(cols), uint64(rows)}, RandomMatrix(rng, dt, rows, cols, o.Std))
	}
	experts := func(name string, rows, cols int) { // n matrices of rows x cols, one 3-D tensor
		dt := o.tensorType(name)
		rb := rows * dt.RowBytes(cols)
		b := make([]byte, o.Experts*rb)
		seed := rng.Uint64() // one draw, so the file stays a function of Seed
		var wg sync.WaitGroup
		for e := range o.Experts { // a random stream per expert: big files write on every core
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, uint64(e)))
				copy(b[e*rb:], RandomMatrix(r, dt, rows, cols, o.Std))
			})
		}
		wg.Wait()
		gw.AddTensor(name, gguf.Type(dt), []uint64{uint64(cols), uint64(rows), uint64(o.Experts)}, b)
	}
	ones := func(name string, n int) {
		b := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1))
		}
		gw.AddTensor(name, gguf.Type(quant.F32), []uint64{uint64(n)}, b)
	}
	normVec := func(name string, n int) { // norm weights around 1
		w := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(w[4*i:], math.Float32bits(float32(1+0.5*rng.NormFloat64())))
		}
		gw.AddTensor(name, gguf.Type(quant.F32), []uint64{uint64(n)}, w)
	}
	vec := func(name string, n int) {
		gw.AddTensor(name, gguf.Type(quant.F32), []uint64{uint64(n)}, RandomMatrix(rng, quant.F32, 1, n, o.Std))
	}
	mat("token_embd.weight", o.Vocab, o.Dim)
	ones("output_norm.weight", o.Dim)
	if !o.Tied {
		mat("output.weight", o.Vocab, o.Dim)
	}
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		if o.hybrid() {
			o.hybridAttn(gw, rng, i, mat, ones)
		} else {
			mat(p+"attn_q.weight", qd, o.Dim)
			mat(p+"attn_k.weight", kv, o.Dim)
			mat(p+"attn_v.weight", kv, o.Dim)
			mat(p+"attn_output.weight", o.Dim, qd)
		}
		if arch == "gpt-oss" {
			vec(p+"attn_output.bias", o.Dim)
			vec(p+"attn_sinks.weight", o.Heads)
		}
		if arch == "qwen2" || arch == "qwen2moe" || arch == "gpt-oss" {
			vec(p+"attn_q.bias", qd)
			vec(p+"attn_k.bias", kv)
			vec(p+"attn_v.bias", kv)
		}
		ones(p+"attn_norm.weight", o.Dim)
		if arch == "gpt-oss" || o.hybrid() { // their pre-FFN norm's name
			ones(p+"post_attention_norm.weight", o.Dim)
		} else {
			ones(p+"ffn_norm.weight", o.Dim)
		}
		if o.gemma() {
			o.gemmaLayer(p, normVec)
		}
		switch arch {
		case "qwen3", "qwen3moe": // per-head Q and K norms
			ones(p+"attn_q_norm.weight", o.HeadDim)
			ones(p+"attn_k_norm.weight", o.HeadDim)
		case "olmoe": // over the whole width; random, so that a per-head norm would differ
			normVec(p+"attn_q_norm.weight", qd)
			normVec(p+"attn_k_norm.weight", kv)
		}
		if o.Experts == 0 {
			mat(p+"ffn_gate.weight", o.FFN, o.Dim)
			mat(p+"ffn_down.weight", o.Dim, o.FFN)
			mat(p+"ffn_up.weight", o.FFN, o.Dim)
			continue
		}
		gw.AddTensor(p+"ffn_gate_inp.weight", gguf.Type(quant.F32), []uint64{uint64(o.Dim), uint64(o.Experts)},
			RandomMatrix(rng, quant.F32, o.Experts, o.Dim, cmp.Or(o.RouterStd, 2*o.Std)))
		experts(p+"ffn_gate_exps.weight", o.ExpertFFN, o.Dim)
		experts(p+"ffn_up_exps.weight", o.ExpertFFN, o.Dim)
		experts(p+"ffn_down_exps.weight", o.Dim, o.ExpertFFN)
		if arch == "gpt-oss" { // the router's and experts' biases, F32
			vec(p+"ffn_gate_inp.bias", o.Experts)
			for _, b := range []struct {
				name string
				w    int
			}{{"ffn_gate_exps.bias", o.ExpertFFN}, {"ffn_up_exps.bias", o.ExpertFFN}, {"ffn_down_exps.bias", o.Dim}} {
				gw.AddTensor(p+b.name, gguf.Type(quant.F32), []uint64{uint64(b.w), uint64(o.Experts)},
					RandomMatrix(rng, quant.F32, o.Experts, b.w, o.Std))
			}
		}
		if o.SharedFFN > 0 {
			if arch == "qwen2moe" || arch == "qwen35moe" {
				vec(p+"ffn_gate_inp_shexp.weight", o.Dim)
			}
			mat(p+"ffn_gate_shexp.weight", o.SharedFFN, o.Dim)
			mat(p+"ffn_up_shexp.weight", o.SharedFFN, o.Dim)
			mat(p+"ffn_down_shexp.weight", o.Dim, o.SharedFFN)
		}
	}
	o.gemmaDense(mat)
	_, err := gw.WriteTo(w)
	return err
}

// setVocab writes a SentencePiece vocabulary's keys: <unk> 0, <s> 1, </s> 2.
func setVocab(gw *gguf.Writer, pieces []string, scores []float32, types []int32) {
	gw.Set("tokenizer.ggml.model", "llama")
	gw.Set("tokenizer.ggml.tokens", pieces)
	gw.Set("tokenizer.ggml.scores", scores)
	gw.Set("tokenizer.ggml.token_type", types)
	gw.Set("tokenizer.ggml.bos_token_id", uint32(1))
	gw.Set("tokenizer.ggml.eos_token_id", uint32(2))
	gw.Set("tokenizer.ggml.unknown_token_id", uint32(0))
}

func RandomMatrix(rng *rand.Rand, t quant.DType, rows, cols int, std float64) []byte {
	row := make([]float32, cols)
	out := make([]byte, rows*t.RowBytes(cols))
	rb := t.RowBytes(cols)
	for r := range rows {
		for i := range row {
			row[i] = float32(rng.NormFloat64() * std)
		}
		quant.Lookup(t).Quantize(row, out[r*rb:(r+1)*rb])
	}
	return out
}

// synthVocab returns GGUF pieces (spaces as U+2581), scores and types: the
// given tokenizer's, or <unk>, <s>, </s>, 256 byte pieces, printable ASCII and
// then ever longer strings of letters so that BPE merges have work to do.
func synthVocab(o Options) ([]string, []float32, []int32) {
	if o.Tokenizer != nil {
		p, s, ty := o.Tokenizer.Pieces()
		out := make([]string, len(p))
		for i := range p {
			out[i] = strings.ReplaceAll(p[i], " ", "\u2581")
		}
		return out, s, ty
	}
	pieces := []string{"<unk>", "<s>", "</s>"}
	types := []int32{tokenizer.TokenUnknown, tokenizer.TokenControl, tokenizer.TokenControl}
	for b := range 256 {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
		types = append(types, tokenizer.TokenByte)
	}
	seen := map[string]bool{}
	add := func(p string) {
		if len(pieces) < o.Vocab && !seen[p] {
			seen[p] = true
			pieces = append(pieces, strings.ReplaceAll(p, " ", "\u2581"))
			types = append(types, tokenizer.TokenNormal)
		}
	}
	for c := byte(' '); c <= '~'; c++ {
		add(string(c))
	}
	const letters = " etaoinshrdlucmfwypvbgkjqxz"
	level := []string{""}
	for len(pieces) < o.Vocab {
		var next []string
		for _, p := range level {
			for _, c := range letters {
				s := p + string(c)
				next = append(next, s)
				if len(s) > 1 {
					add(s)
				}
			}
		}
		level = next
	}
	scores := make([]float32, len(pieces))
	for i := range scores {
		if types[i] == tokenizer.TokenNormal {
			scores[i] = -float32(i)
		}
	}
	return pieces, scores, types
}

// MixType is the main type of a llama-quantize mix Write knows (q4_k_m,
// q5_k_m).
func MixType(mix string) (quant.DType, bool) {
	t, ok := map[string]quant.DType{"q4_k_m": quant.Q4_K, "q5_k_m": quant.Q5_K}[mix]
	return t, ok
}

// tensorType is a matrix's type: DType, or under Mix llama-quantize's
// choice (llama_tensor_get_type for Q4_K_M and Q5_K_M).
func (o Options) tensorType(name string) quant.DType {
	if o.Arch == "gpt-oss" && strings.Contains(name, "_exps.weight") {
		return quant.MXFP4 // as llama.cpp's MXFP4_MOE files hold them
	}
	if o.Mix == "" {
		return o.DType
	}
	if name == "output.weight" || o.Tied && name == "token_embd.weight" {
		return quant.Q6_K
	}
	var layer int
	var role string
	if _, err := fmt.Sscanf(name, "blk.%d.%s", &layer, &role); err != nil {
		return o.DType
	}
	// use_more_bits: the first and last eighth of the layers, and every
	// third one between.
	n := o.Layers
	more := layer < n/8 || layer >= 7*n/8 || (layer-n/8)%3 == 2
	if more && (role == "attn_v.weight" || strings.HasPrefix(role, "ffn_down")) {
		return quant.Q6_K
	}
	if role == "ffn_gate_inp.weight" { // llama-quantize never quantizes the router
		return quant.F32
	}
	return o.DType
}

// WritableNames lists the types Write can produce (those with a quantizer).
func WritableNames() string {
	var out []string
	for t := quant.DType(0); t < 64; t++ {
		if f := quant.Lookup(t); f != nil && f.Quantize != nil {
			out = append(out, t.String())
		}
	}
	return strings.Join(out, ", ")
}
