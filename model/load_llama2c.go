package model

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/tokenizer"
)

// llama2cHeader is the 7 int32 at the start of a legacy llama2.c checkpoint.
const llama2cHeader = 7 * 4

func loadLlama2c(data []byte, tokenizerPath string) (*Model, error) {
	if len(data) < llama2cHeader {
		return nil, malformed("llama2.c header needs %d bytes, file has %d", llama2cHeader, len(data))
	}
	var h [7]int32
	for i := range h {
		h[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
	}
	c := Config{Arch: "llama", Dim: int(h[0]), FFN: int(h[1]), Layers: int(h[2]), Heads: int(h[3]),
		KVHeads: int(h[4]), Vocab: int(h[5]), Context: int(h[6]), RMSEps: 1e-5, RopeTheta: 10000}
	// A positive vocab size means the classifier shares the embedding.
	c.Tied = c.Vocab > 0
	if c.Vocab < 0 {
		c.Vocab = -c.Vocab
	}
	if c.Heads > 0 {
		c.HeadDim = c.Dim / c.Heads
		c.RopeDim = c.HeadDim
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("llama2.c header %v: %w", h, err)
	}
	if c.HeadDim*c.Heads != c.Dim {
		return nil, fmt.Errorf("%w: dim %d not divisible by %d heads", ErrShape, c.Dim, c.Heads)
	}
	// The header fixes the file's size: check it before reading anything.
	kv := uint64(c.KVDim())
	d, f, l := uint64(c.Dim), uint64(c.FFN), uint64(c.Layers)
	floats := uint64(c.Vocab)*d + l*(2*d+2*d*d+2*kv*d+3*f*d) + d
	if l > 1<<16 || d > 1<<20 || f > 1<<22 || floats > uint64(len(data)-llama2cHeader)/4 {
		return nil, fmt.Errorf("%w: header %v describes %d weights, the file holds %d (truncated?)",
			ErrMalformed, h, floats, (len(data)-llama2cHeader)/4)
	}
	if tokenizerPath == "" {
		return nil, fmt.Errorf("%w: a llama2.c checkpoint needs a tokenizer file (--tokenizer)", ErrMalformed)
	}
	tok, err := tokenizer.LoadLlama2c(tokenizerPath, c.Vocab)
	if err != nil {
		return nil, fromTokenizer(err)
	}

	r := &f32Reader{data: data, off: llama2cHeader}
	D, F, L, KV := c.Dim, c.FFN, c.Layers, c.KVDim()
	embed := r.matrix("token_embedding", c.Vocab, D)
	rmsAtt := r.floats("rms_att", L*D)
	wq := r.stack("wq", L, D, D)
	wk := r.stack("wk", L, KV, D)
	wv := r.stack("wv", L, KV, D)
	wo := r.stack("wo", L, D, D)
	rmsFFN := r.floats("rms_ffn", L*D)
	w1 := r.stack("w1", L, F, D)
	w2 := r.stack("w2", L, D, F)
	w3 := r.stack("w3", L, F, D)
	rmsFinal := r.floats("rms_final", D)
	r.skip("freq_cis", 2*c.Context*c.HeadDim/2)
	output := embed
	if !c.Tied {
		output = r.matrix("wcls", c.Vocab, D)
	}
	if r.err != nil {
		return nil, r.err
	}
	m := &Model{Config: c, Tokenizer: tok, Embed: embed, Output: output, OutNorm: rmsFinal,
		StopTokens: []int{tok.BOS, tok.EOS}}
	for i := range L {
		m.Layers = append(m.Layers, Layer{
			AttnNorm: rmsAtt[i*D : (i+1)*D],
			Wq:       wq[i], Wk: wk[i], Wv: wv[i], Wo: wo[i],
			FFNNorm: rmsFFN[i*D : (i+1)*D],
			W1:      w1[i], W2: w2[i], W3: w3[i],
		})
	}
	return m, m.validate()
}

// f32Reader walks the float32 arrays of a llama2.c checkpoint in order.
type f32Reader struct {
	data []byte
	off  int
	err  error
}

func (r *f32Reader) take(name string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > (len(r.data)-r.off)/4 {
		r.err = fmt.Errorf("%w: %s needs %d floats at byte %d, file has %d bytes (truncated?)",
			errors.Join(ErrMalformed, ErrMissingTensor), name, n, r.off, len(r.data))
		return nil
	}
	b := r.data[r.off : r.off+4*n]
	r.off += 4 * n
	return b
}

func (r *f32Reader) matrix(name string, rows, cols int) *Matrix {
	b := r.take(name, rows*cols)
	if b == nil {
		return nil
	}
	m, _ := NewMatrix(quant.F32, rows, cols, b)
	return m
}

func (r *f32Reader) stack(name string, n, rows, cols int) []*Matrix {
	out := make([]*Matrix, n)
	for i := range out {
		out[i] = r.matrix(fmt.Sprintf("%s[%d]", name, i), rows, cols)
	}
	return out
}

func (r *f32Reader) floats(name string, n int) []float32 {
	return bytesAs[float32](r.take(name, n))
}

func (r *f32Reader) skip(name string, n int) { r.take(name, n) }
