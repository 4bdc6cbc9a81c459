package model

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/tokenizer"
	"golang.org/x/sys/unix"
)

// Config holds a Llama model's hyperparameters.
type Config struct {
	Arch      string  // GGUF general.architecture, or "llama" for llama2.c files
	Dim       int     // embedding width
	FFN       int     // feed-forward hidden width
	Layers    int     // transformer blocks
	Heads     int     // query heads
	KVHeads   int     // key/value heads (grouped-query attention when < Heads)
	HeadDim   int     // width of one head
	RopeDim   int     // leading dims of each head that RoPE rotates (== HeadDim usually)
	Vocab     int     // vocabulary size
	Context   int     // longest sequence the model was trained for
	RMSEps    float32 // the norms' epsilon (RMSNorm's; LayerNorm's when LayerNorm)
	RopeTheta float32 // RoPE frequency base
	RopeNeoX  bool    // rotate pairs (i, i+RopeDim/2) instead of adjacent (2i, 2i+1)
	Tied      bool    // the classifier is the token embedding

	// Per-architecture numerics; the zero values are plain Llama.
	RopeScaling   RopeScaling
	AttnScale     float32 // multiplies q.k before the softmax; 0 means 1/sqrt(HeadDim)
	AttnSoftcap   float32 // scores become cap*tanh(score/cap) (gemma2); 0 is off
	ScaleQ        bool    // the query takes the scale before attention, the scores none (llama.cpp's gemma graphs)
	FinalSoftcap  float32 // logits likewise (gemma2)
	SlidingWindow int     // a query sees keys less than this many positions back; 0 is all
	// SymmetricWindow: a sliding layer's query sees the keys within half
	// the window either side instead (gemma-embedding: bidirectional).
	SymmetricWindow bool
	SlidePattern    int     // layer l slides iff l%n < n-1, llama.cpp's pattern (2: gemma2's and gpt-oss's even layers, 6: gemma3's); 0: every layer
	RopeThetaSWA    float32 // sliding layers' RoPE base, unscaled (gemma3); 0: theirs is the others'
	EmbedScale      float32 // embeddings are multiplied by it (gemma2: sqrt(Dim)); 0 is off
	ResidualScale   float32 // attention's and FFN's outputs are, before their residual add (granite); 0 is off
	LogitScale      float32 // logits are multiplied by 1/LogitScale (granite); 0 is off
	FFNGELU         bool    // the FFN is gelu(gate)*up (gemma2), not silu(gate)*up
	// Encoders (bert, nomic-bert).
	LayerNorm bool // norms are LayerNorms with biases, not RMSNorms
	PostNorm  bool // a block's norms follow its residual adds (Layer.AttnNorm, FFNNorm)
	// NonCausal: every token attends to every token of its sequence, so a
	// text runs in one step and the model embeds; it does not generate.
	NonCausal bool

	// Pooling is <arch>.pooling_type (llama.h: 0 none, 1 mean, 2 cls, 3
	// last, 4 rank): how an embedding model pools; 0 when the file says none.
	Pooling int

	// MoE is the mixture of experts that replaces every block's FFN; the
	// zero value is a dense FFN.
	MoE MoE
	// Recurrent: Gated DeltaNet layers among the attention ones (qwen35);
	// GatedQ: an attention layer's Q projection gives each head's query
	// then its output gate (sigmoid), which scales the head's output.
	Recurrent Recurrent
	GatedQ    bool

	// Gemma 4 (gemma4.go): per-layer shapes (nil: every layer is the
	// Config's), which layers slide (nil: SlidePattern), how many last
	// layers read earlier layers' K and V, the per-layer embeddings'
	// width (0: none), and V RMS-normalised per head without a weight.
	Shapes      []LayerShape
	SlideLayers []bool
	KVShared    int
	PerLayer    int
	VNorm       bool
}

// MoE describes a mixture-of-experts FFN, as llama.cpp's build_moe_ffn
// runs it: a router scores the experts, the top Used of Experts run on
// the token, and their outputs add up weighted by the gate.
type MoE struct {
	Experts, Used int // expert_count, expert_used_count
	FFN           int // one expert's hidden width (expert_feed_forward_length)
	SharedFFN     int // the shared expert's width (0: none)
	Gating        Gating
	// Norm divides the chosen experts' weights by their sum
	// (expert_weights_norm; qwen3moe and Mixtral always).
	Norm bool
	// Scale multiplies the weights (expert_weights_scale; 0 is 1).
	Scale float32
	// OAI: the experts' activation is llama.cpp's swiglu_oai, with
	// gpt-oss's constants (alpha 1.702, limit 7): gate clamped above,
	// up to both sides, gate*sigmoid(alpha*gate)*(up+1).
	OAI bool
}

// Gating is how router logits become expert weights (llama.h's
// llama_expert_gating_func_type).
type Gating uint8

// The gating functions.
const (
	GatingSoftmax     Gating = iota // softmax over every expert, then the top k
	GatingSigmoid                   // sigmoid of each logit, then the top k
	GatingSoftmaxTopK               // the top k logits, then a softmax over them (gpt-oss)
)

func (g Gating) String() string {
	return [...]string{"softmax", "sigmoid", "softmax-after-top-k"}[g]
}

// On says whether the FFN is a mixture of experts.
func (m MoE) On() bool { return m.Experts > 0 }

// RopeScaling stretches RoPE past the trained context, as llama.cpp's
// rope.scaling keys say: linear divides positions by Factor; yarn blends
// interpolated and extrapolated frequencies (ggml's rope_yarn).
type RopeScaling struct {
	Type               string  // "", "linear" or "yarn"
	Factor             float32 // context stretch (freq_scale = 1/Factor)
	OrigCtx            int     // yarn: the original context length
	ExtFactor          float32 // yarn: extrapolation mix (1 for yarn)
	AttnFactor         float32 // yarn: magnitude scale (1 unless the file says)
	BetaFast, BetaSlow float32 // yarn: correction range (32 and 1)
}

// SlidingLayers counts the layers with K and V that attend through the
// sliding window.
func (c Config) SlidingLayers() int {
	n := 0
	for l := range c.Layers {
		if c.Sliding(l) && !c.Recurrent.Layer(l) && c.KVSource(l) == l {
			n++
		}
	}
	return n
}

// KVLayout places the layers' K and V in the paged cache's blocks: a block
// holds Slots layers, and every layer has a group and a slot in it.
// Without window groups (windowed false, or a model whose layers all see
// the same positions) group 0 holds every layer with K and V. With them
// (vLLM's hybrid layout) group 0 holds the layers that see every position,
// Slots of them, and groups 1..Tables the sliding-window layers, Slots to
// a group (the last may leave slots empty): a sequence holds group 0's
// blocks for its whole length and the others' only for its window.
type KVLayout struct {
	Slots, Tables int
	Group, Slot   []int // per layer; -1 for a layer without K and V
}

// Layout returns the model's KVLayout, with window groups if windowed and
// the model has both kinds of layer (and attends causally).
func (c Config) Layout(windowed bool) KVLayout {
	attn, sliding := c.AttnLayers(), c.SlidingLayers()
	lay := KVLayout{Slots: attn, Group: make([]int, c.Layers), Slot: make([]int, c.Layers)}
	split := windowed && sliding > 0 && sliding < attn && !c.NonCausal
	if split {
		lay.Slots = attn - sliding
		lay.Tables = (sliding + lay.Slots - 1) / lay.Slots
	}
	main, win := 0, 0
	for l := range c.Layers {
		switch {
		case c.KVSource(l) != l: // set below, after its source
		case c.Recurrent.Layer(l):
			lay.Group[l], lay.Slot[l] = -1, -1
		case split && c.Sliding(l):
			lay.Group[l], lay.Slot[l] = 1+win/lay.Slots, win%lay.Slots
			win++
		default:
			lay.Slot[l] = main
			main++
		}
	}
	for l := range c.Layers { // a layer sharing K and V reads its source's blocks
		if s := c.KVSource(l); s != l {
			lay.Group[l], lay.Slot[l] = lay.Group[s], lay.Slot[s]
		}
	}
	return lay
}

// Sliding reports whether layer l attends through the sliding window.
func (c Config) Sliding(l int) bool {
	if c.SlideLayers != nil {
		return c.SlidingWindow > 0 && c.SlideLayers[l]
	}
	n := c.SlidePattern
	return c.SlidingWindow > 0 && (n == 0 || l%n < n-1)
}

// KVDim returns the width of one token's K (or V) across KV heads.
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim }

// QDim returns the width of one token's Q across heads.
func (c Config) QDim() int { return c.Heads * c.HeadDim }

// Validate reports hyperparameters out of range or inconsistent (ErrShape).
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"dim", c.Dim}, {"ffn", c.FFN}, {"layers", c.Layers}, {"heads", c.Heads}, {"kv heads", c.KVHeads},
		{"head dim", c.HeadDim}, {"vocab", c.Vocab}, {"context", c.Context}} {
		if f.v <= 0 || f.v > 1<<24 {
			errs = append(errs, fmt.Errorf("%s = %d", f.name, f.v))
		}
	}
	if c.KVHeads > 0 && c.Heads%c.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("heads %d not a multiple of kv heads %d", c.Heads, c.KVHeads))
	}
	if c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0 {
		errs = append(errs, fmt.Errorf("rope dim %d for head dim %d", c.RopeDim, c.HeadDim))
	}
	if c.Shapes != nil && len(c.Shapes) != c.Layers {
		errs = append(errs, fmt.Errorf("%d layer shapes for %d layers", len(c.Shapes), c.Layers))
	}
	for l := range c.Shapes { // each layer's own widths, as the Config's (a file's arrays are hostile too)
		lc := c.At(l)
		lc.Shapes = nil
		if err := lc.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("layer %d: %w", l, err))
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrShape, err)
	}
	return nil
}

// Layer holds one transformer block's weights.
type Layer struct {
	AttnNorm   []float32
	Wq, Wk, Wv *Matrix
	Bq, Bk, Bv []float32 // Q, K, V biases (qwen2), or nil
	QNorm      []float32 // per-head RMS norm of Q, HeadDim wide (qwen3), or nil
	KNorm      []float32 // likewise of K
	Wo         *Matrix
	PostAttn   []float32 // RMS norm of the attention output (gemma2), or nil
	FFNNorm    []float32
	W1, W2, W3 *Matrix   // gate, down, up
	PostFFN    []float32 // RMS norm of the FFN output (gemma2), or nil
	// Encoders: the LayerNorms' biases, and the dense layers' (bert).
	AttnNormB, FFNNormB []float32
	Bo, BUp, BDown      []float32
	// Mixture of experts (Config.MoE; W1, W2, W3 are then nil): the router
	// (Experts x Dim), each expert's gate, up and down matrices (views of
	// the file's 3-D tensors, mapped, never copied), and the shared expert
	// with its gate (a Dim vector whose dot with x, through a sigmoid,
	// scales it), or nils.
	Router                  *Matrix
	ExpGate, ExpUp, ExpDown []*Matrix
	ShGate, ShUp, ShDown    *Matrix
	ShGateInp               []float32
	// gpt-oss: per head, a logit that joins the attention softmax's
	// denominator; the router's bias; each expert's gate, up and down
	// biases (views of the file's 2-D tensors).
	Sinks                      []float32
	RouterB                    []float32
	ExpGateB, ExpUpB, ExpDownB [][]float32
	// SSM: a recurrent layer's weights (Config.Recurrent; Wq, Wk, Wv and
	// Wo are then nil).
	SSM *DeltaNet
	// Gemma 4: the per-layer embedding's gate (PerLayer x Dim), projection
	// (Dim x PerLayer) and the norm after it, or nils; OutScale, one value
	// that scales the block's output, or nil. Wv is nil where V is K's
	// projection, Wk and Wv where the layer reads another's K and V.
	PLEGate, PLEProj  *Matrix
	PLENorm, OutScale []float32
	// Gemma 4's mixture (26B-A4B), beside the dense FFN: the router's
	// input scale, each expert's output scale (or nil), the norm of the
	// experts' input and those of the dense FFN's and the experts' outputs.
	RouterScale, ExpDownScale           []float32
	MoEInNorm, DenseOutNorm, MoEOutNorm []float32
}

// Model is a loaded Llama: config, weights and tokenizer. Weights may be
// memory-mapped; Close releases them.
type Model struct {
	Config    Config
	Format    string // "gguf" or "llama2c"
	Path      string
	Embed     *Matrix // Vocab x Dim
	Layers    []Layer
	OutNorm   []float32
	Output    *Matrix // Vocab x Dim; the same as Embed when tied
	Tokenizer *tokenizer.Tokenizer
	// RopeFactors divides each rotated pair's frequency (Llama 3.1's
	// rope_freqs.weight), or is nil.
	RopeFactors []float32
	// StopTokens end generation when sampled: the vocabulary's
	// end-of-generation set (llama2.c files: EOS and BOS, as run.c stops).
	StopTokens []int
	// ChatTemplate is the file's tokenizer.chat_template (Jinja), or "".
	ChatTemplate string
	// Encoders: learned positions (Context x Dim, bert; nil with RoPE),
	// the token-type row every token gets (type 0), and the LayerNorm of
	// the summed embeddings.
	PosEmbd               *Matrix
	TypeEmbd              []float32
	EmbedNorm, EmbedNormB []float32
	// Rank is a reranker's head (Config.Pooling PoolingRank), or nil.
	Rank *RankHead
	// PLE is Gemma 4's per-layer embedding table (Vocab x Layers*PerLayer),
	// PLEProj its projection of the embedding (Layers*PerLayer x Dim) and
	// PLENorm the norm of each layer's slice of it; nil without them.
	PLE, PLEProj *Matrix
	PLENorm      []float32
	// Dense are the projections after pooling (a sentence-transformers
	// model converted with its dense modules: gemma-embedding's dense_2
	// then dense_3), applied in order to the pooled vector; nil for none.
	Dense []*Matrix

	mapped  []byte
	repacks repacks
}

// LoadOptions says how to load a model file.
type LoadOptions struct {
	Format    string // "gguf", "llama2c" or "" to detect (GGUF magic or .gguf name, else llama2.c)
	Tokenizer string // llama2.c tokenizer file; required for llama2.c checkpoints
	Logger    *slog.Logger
}

// Load opens a GGUF or llama2.c model file, memory-maps it and validates it.
func Load(path string, opts LoadOptions) (*Model, error) {
	data, err := mmapFile(path)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	format := opts.Format
	if format == "" {
		format = "llama2c"
		if (len(data) >= 4 && string(data[:4]) == gguf.Magic) || strings.EqualFold(filepath.Ext(path), ".gguf") {
			format = "gguf"
		}
	}
	var m *Model
	switch format {
	case "gguf":
		m, err = loadGGUF(data)
	case "llama2c":
		m, err = loadLlama2c(data, opts.Tokenizer)
	default:
		err = fmt.Errorf("%w: format %q (want gguf or llama2c)", ErrUnsupported, format)
	}
	if err != nil {
		_ = munmap(data)
		return nil, &FileError{Path: path, Err: err}
	}
	m.Format, m.Path, m.mapped = format, path, data
	return m, nil
}

// Close releases the model's mapped memory. The model must not be used after.
func (m *Model) Close() error {
	m.closeRepacks()
	if m.mapped == nil {
		return nil
	}
	err := munmap(m.mapped)
	m.mapped = nil
	return err
}

// WeightBytes returns the bytes of weights a decode step reads: every matrix
// and norm except the token embedding table (unless it doubles as classifier).
func (m *Model) WeightBytes() int {
	n := 4 * len(m.OutNorm)
	if m.Output != nil {
		n += m.Output.Bytes()
	}
	for _, l := range m.Layers {
		n += l.Wq.Bytes() + l.Wk.Bytes() + l.Wv.Bytes() + l.Wo.Bytes() + 4*(len(l.AttnNorm)+len(l.FFNNorm))
		for _, w := range []*Matrix{l.W1, l.W2, l.W3, l.Router, l.ShGate, l.ShUp, l.ShDown, l.PLEGate, l.PLEProj} {
			n += w.Bytes()
		}
		if d := l.SSM; d != nil { // a Gated DeltaNet layer's projections
			n += d.QKV.Bytes() + d.Gate.Bytes() + d.Beta.Bytes() + d.Alpha.Bytes() + d.Out.Bytes()
		}
		if len(l.ExpUp) > 0 { // one token reads Used experts' rows: the average expert's share
			e := 0
			for i := range l.ExpUp {
				e += l.ExpGate[i].Bytes() + l.ExpUp[i].Bytes() + l.ExpDown[i].Bytes()
			}
			n += e / len(l.ExpUp) * m.Config.MoE.Used
		}
	}
	if m.PLE != nil { // gemma4: the projection, and one row of the table
		n += m.PLEProj.Bytes() + m.PLE.Bytes()/max(m.PLE.Rows, 1)
	}
	return n
}

// Generates reports whether the model has a classifier and causal
// attention: an encoder (or a decoder its file makes bidirectional) only
// embeds.
func (m *Model) Generates() bool { return m.Output != nil && !m.Config.NonCausal && m.Rank == nil }

// Digest identifies the file's contents cheaply: SHA-256 over its size and
// its first and last 8 MiB (the header, the tensor directory, the first
// and last tensors), for caches that must not outlive the weights.
func (m *Model) Digest() string {
	const span = 8 << 20
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", len(m.mapped))
	h.Write(m.mapped[:min(span, len(m.mapped))])
	h.Write(m.mapped[max(0, len(m.mapped)-span):])
	return hex.EncodeToString(h.Sum(nil))
}

// FileBytes returns the size of the mapped model file: the weights' resident memory.
func (m *Model) FileBytes() int64 { return int64(len(m.mapped)) }

// IsStop reports whether id ends generation.
func (m *Model) IsStop(id int) bool {
	for _, s := range m.StopTokens {
		if s == id {
			return true
		}
	}
	return false
}

func mmapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, malformed("empty file")
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", ErrMalformed)
	}
	return unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
}

func munmap(b []byte) error { return unix.Munmap(b) }

// DropResident tells the kernel the mapped weights' pages may go; they are
// read back from the file on the next use. Repacked copies are unmapped:
// no backend may be running the model, and each repacks on waking.
func (m *Model) DropResident() error {
	m.closeRepacks()
	if m.mapped == nil {
		return nil
	}
	return unix.Madvise(m.mapped, unix.MADV_DONTNEED)
}

// checkShape returns an error naming the matrix unless it is rows x cols.
func checkShape(name string, m *Matrix, rows, cols int) error {
	if m.Rows != rows || m.Cols != cols {
		return fmt.Errorf("%w: %s is %dx%d, want %dx%d", ErrShape, name, m.Rows, m.Cols, rows, cols)
	}
	return nil
}

func (m *Model) validate() error {
	c := m.Config
	errs := []error{checkShape("token embedding", m.Embed, c.Vocab, c.Dim)}
	if m.Output != nil { // encoders have no classifier
		errs = append(errs, checkShape("output", m.Output, c.Vocab, c.Dim))
		if len(m.OutNorm) != c.Dim {
			errs = append(errs, fmt.Errorf("%w: output norm has %d, want %d", ErrShape, len(m.OutNorm), c.Dim))
		}
	}
	for i, l := range m.Layers {
		p := fmt.Sprintf("layer %d ", i)
		c := m.Config.At(i)
		switch {
		case c.Recurrent.Layer(i):
			errs = append(errs, checkDeltaNet(p, l, c))
		case c.KVSource(i) != i || c.Shapes != nil && l.Wv == nil: // K and V from another layer, or V from K (gemma4)
			errs = append(errs, checkShape(p+"wq", l.Wq, c.qRows(), c.Dim), checkShape(p+"wo", l.Wo, c.Dim, c.QDim()))
			if c.KVSource(i) == i {
				errs = append(errs, checkShape(p+"wk", l.Wk, c.KVDim(), c.Dim))
			}
		default:
			errs = append(errs,
				checkShape(p+"wq", l.Wq, c.qRows(), c.Dim),
				checkShape(p+"wk", l.Wk, c.KVDim(), c.Dim),
				checkShape(p+"wv", l.Wv, c.KVDim(), c.Dim),
				checkShape(p+"wo", l.Wo, c.Dim, c.QDim()))
		}
		switch {
		case c.MoE.On() && c.Shapes == nil:
			errs = append(errs, checkExperts(p, l, c))
		default:
			errs = append(errs, checkShape(p+"w2", l.W2, c.Dim, c.FFN), checkShape(p+"w3", l.W3, c.FFN, c.Dim))
		}
		if l.W1 != nil && !c.MoE.On() { // nil: an ungated FFN (bert)
			errs = append(errs, checkShape(p+"w1", l.W1, c.FFN, c.Dim))
		}
		if c.Shapes != nil && l.Router != nil { // gemma4: experts beside the dense FFN
			errs = append(errs, checkExperts(p, l, c))
		}
		if len(l.AttnNorm) != c.Dim || len(l.FFNNorm) != c.Dim {
			errs = append(errs, fmt.Errorf("%w: layer %d norms have %d and %d, want %d",
				ErrShape, i, len(l.AttnNorm), len(l.FFNNorm), c.Dim))
		}
	}
	if m.Tokenizer.VocabSize() != c.Vocab {
		errs = append(errs, fmt.Errorf("%w: tokenizer has %d pieces, model vocab %d",
			ErrShape, m.Tokenizer.VocabSize(), c.Vocab))
	}
	return errors.Join(errs...)
}
