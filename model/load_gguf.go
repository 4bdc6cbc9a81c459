package model

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/tokenizer"
)

func loadGGUF(data []byte) (*Model, error) {
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, fromGGUF(err)
	}
	name, _ := f.MetaString("general.architecture")
	arch, err := LookupArch(name)
	if err != nil {
		return nil, err
	}
	c, err := ggufConfig(f, name)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fromTokenizer(err)
	}
	if c.Vocab == 0 {
		c.Vocab = tok.VocabSize()
	}
	c.RopeNeoX = arch.RopeNeoX
	if err := archConfig(f, arch, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// A block count the directory cannot back is malformed, and looping
	// over it would only waste time.
	if c.Layers > len(f.Tensors)/arch.blockTensors() {
		return nil, fmt.Errorf("%w: block_count %d but the file has %d tensors", ErrMissingTensor, c.Layers, len(f.Tensors))
	}
	m := &Model{Config: c, Tokenizer: tok}
	ld := &ggufLoader{f: f, data: data}
	tn := arch.Tensors
	m.Embed = ld.matrix(tn.TokenEmbd, c.Vocab, c.Dim)
	switch {
	case arch.Encoder:
		ld.encoder(arch, m)
	case hasTensor(f, tn.Output):
		m.OutNorm = ld.vector(tn.OutputNorm, c.Dim)
		m.Output = ld.matrix(tn.Output, c.Vocab, c.Dim)
	default:
		m.OutNorm = ld.vector(tn.OutputNorm, c.Dim)
		m.Output, m.Config.Tied = m.Embed, true
	}
	// Llama 3.1 divides each pair's RoPE frequency by these factors
	// (gemma4: its full layers', whose RoPE width the Config's is).
	if _, ok := f.Tensor(tn.RopeFreqs); ok {
		m.RopeFactors = ld.vector(tn.RopeFreqs, c.RopeDim/2)
	}
	for i := range c.Layers {
		m.Layers = append(m.Layers, ld.layer(arch, c.At(i), i))
	}
	ld.gemma4Model(m)
	if c.Pooling == PoolingRank {
		if m.Rank, err = ld.rankHead(arch, c); err != nil {
			return nil, err
		}
	}
	if arch.EmbedDense {
		m.Dense = ld.dense(c)
	}
	if err := ld.unsupportedError(); err != nil {
		return nil, err
	}
	if err := errors.Join(ld.errs...); err != nil {
		return nil, err
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	m.StopTokens = slices.Clone(tok.EOG())
	if ct, ok := f.MetaString("tokenizer.chat_template"); ok {
		m.ChatTemplate = strings.Clone(ct)
	}
	return m, nil
}

func ggufConfig(f *gguf.File, arch string) (Config, error) {
	c := Config{Arch: arch, RMSEps: 1e-5, RopeTheta: 10000}
	var missing []string
	get := func(key string, dst *int, required bool) {
		v, ok := f.MetaUint(arch + "." + key)
		if vs, isArr := metaIntArray(f, arch+"."+key); !ok && isArr && len(vs) > 0 {
			v, ok = uint64(slices.Max(vs)), true // a per-layer array (gemma4): the family's reader takes each
		}
		switch {
		case ok && v < 1<<31:
			*dst = int(v)
		case required:
			missing = append(missing, arch+"."+key)
		}
	}
	get("embedding_length", &c.Dim, true)
	get("feed_forward_length", &c.FFN, true)
	get("block_count", &c.Layers, true)
	get("attention.head_count", &c.Heads, true)
	get("context_length", &c.Context, true)
	get("vocab_size", &c.Vocab, false)
	get("pooling_type", &c.Pooling, false)
	c.KVHeads = c.Heads
	get("attention.head_count_kv", &c.KVHeads, false)
	if c.Heads > 0 {
		c.HeadDim = c.Dim / c.Heads
	}
	get("attention.key_length", &c.HeadDim, false)
	c.RopeDim = c.HeadDim
	get("rope.dimension_count", &c.RopeDim, false)
	if len(missing) > 0 {
		return c, fmt.Errorf("%w: metadata %s missing", ErrMalformed, strings.Join(missing, ", "))
	}
	if v, ok := f.MetaFloat(arch + ".attention.layer_norm_rms_epsilon"); ok {
		c.RMSEps = float32(v)
	}
	if v, ok := f.MetaFloat(arch + ".rope.freq_base"); ok {
		c.RopeTheta = float32(v)
	}
	return c, nil
}

type ggufLoader struct {
	f    *gguf.File
	data []byte
	errs []error
	// unsupported counts tensors by a type batchd cannot compute with.
	unsupported map[gguf.Type]int
}

// unsupportedError names the types no table entry covers, with their
// tensor counts, in one line rather than one per tensor.
func (l *ggufLoader) unsupportedError() error {
	if len(l.unsupported) == 0 {
		return nil
	}
	var parts []string
	for typ, n := range l.unsupported {
		parts = append(parts, fmt.Sprintf("%d tensors of type %s", n, typ))
	}
	sort.Strings(parts)
	return fmt.Errorf("%w: %s; batchd computes with %s", ErrUnsupported, strings.Join(parts, ", "), quant.SupportedNames())
}

func (l *ggufLoader) tensor(name string) (*gguf.Tensor, []byte) {
	t, ok := l.f.Tensor(name)
	if !ok {
		l.errs = append(l.errs, fmt.Errorf("%w: %s", ErrMissingTensor, name))
		return nil, nil
	}
	if !quant.DType(t.Type).Supported() {
		if l.unsupported == nil {
			l.unsupported = map[gguf.Type]int{}
		}
		l.unsupported[t.Type]++ // reported once, by type (loadGGUF)
		return nil, nil
	}
	start := l.f.DataOffset + t.Offset
	return t, l.data[start : start+t.Size]
}

func (l *ggufLoader) matrix(name string, rows, cols int) *Matrix {
	t, b := l.tensor(name)
	if t == nil {
		return &Matrix{}
	}
	if len(t.Dims) != 2 || t.Dims[0] != uint64(cols) || t.Dims[1] != uint64(rows) {
		l.errs = append(l.errs, fmt.Errorf("%w: %s has dims %v, want [%d %d]", ErrShape, name, t.Dims, cols, rows))
		return &Matrix{}
	}
	m, err := NewMatrix(quant.DType(t.Type), rows, cols, b)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s: %w", name, err))
		return &Matrix{}
	}
	return m
}

func (l *ggufLoader) vector(name string, n int) []float32 {
	t, b := l.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Dims) != 1 || t.Dims[0] != uint64(n) {
		l.errs = append(l.errs, fmt.Errorf("%w: %s has dims %v, want [%d]", ErrShape, name, t.Dims, n))
		return nil
	}
	m, err := NewMatrix(quant.DType(t.Type), 1, n, b)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s: %w", name, err))
		return nil
	}
	v := make([]float32, n)
	m.Row(0, v)
	return v
}
