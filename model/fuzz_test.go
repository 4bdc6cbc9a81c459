package model

import (
	"bytes"
	"testing"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
)

func seedGGUF(tb testing.TB) []byte {
	w := gguf.NewWriter()
	w.Set("general.architecture", "llama")
	w.Set("llama.embedding_length", uint32(32))
	w.Set("tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>", "a"})
	w.Set("tokenizer.ggml.scores", []float32{0, 0, 0, -1})
	w.Set("tokenizer.ggml.token_type", []int32{2, 3, 3, 1})
	w.AddTensor("output_norm.weight", gguf.Type(quant.F32), []uint64{4}, make([]byte, 16))
	w.AddTensor("token_embd.weight", gguf.Type(quant.Q8_0), []uint64{32, 2}, make([]byte, 68))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzParseGGUF feeds arbitrary bytes to the GGUF parser and loader: they may
// fail, but never panic, and a parsed tensor always lies inside the input.
func FuzzParseGGUF(f *testing.F) {
	f.Add(seedGGUF(f))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := gguf.Parse(b)
		if err == nil {
			for _, tt := range g.Tensors {
				if quant.DType(tt.Type).Supported() && g.DataOffset+tt.Offset+tt.Size > uint64(len(b)) {
					t.Fatalf("tensor %q past the end", tt.Name)
				}
			}
		}
		if m, err := loadGGUF(b); err == nil && m.Config.Vocab <= 0 {
			t.Fatal("loaded a model with no vocab")
		}
	})
}
