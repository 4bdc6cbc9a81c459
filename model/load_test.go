package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

func TestSynthesizeIsDeterministicAndLoads(t *testing.T) {
	for _, dt := range []quant.DType{quant.F32, quant.F16, quant.Q8_0} {
		o := synth.Tiny(dt, 64, 7)
		path, a := synth.WriteFile(t, o)
		_, b := synth.WriteFile(t, o)
		if sha256.Sum256(a) != sha256.Sum256(b) {
			t.Fatalf("%s: same seed gave different bytes", dt)
		}
		o.Seed = 8
		if _, c := synth.WriteFile(t, o); bytes.Equal(a, c) {
			t.Fatalf("%s: different seeds gave the same bytes", dt)
		}
		m, err := Load(path, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := m.Config
		if c.Dim != 64 || c.Layers != 2 || c.Heads != 4 || c.KVHeads != 2 || c.FFN != 96 || c.Vocab != 300 ||
			c.Context != 64 || c.Tied || m.Layers[0].Wq.Type != dt {
			t.Fatalf("%s: loaded config %+v, wq type %s", dt, c, m.Layers[0].Wq.Type)
		}
		// The synthesized vocab round-trips text through byte fallback and merges.
		ids := m.Tokenizer.Encode("the rain in spain ü", true)
		if got := m.Tokenizer.Decode(ids[0], ids[1:]); got != "the rain in spain ü" {
			t.Fatalf("%s: round trip gave %q (ids %v)", dt, got, ids)
		}
		m.Close()
	}
}

func TestLoadErrorsAreTyped(t *testing.T) {
	_, good := synth.WriteFile(t, synth.Tiny(quant.F32, 64, 1))
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rewrite := func(mut func(w *gguf.Writer, f *gguf.File)) []byte { return rewriteGGUF(t, good, mut) }
	dropTensor := func(name string) func(*gguf.Writer, *gguf.File) {
		return func(w *gguf.Writer, _ *gguf.File) { w.RemoveTensor(name) }
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"bad magic", append([]byte("GGUX"), good[4:]...), ErrMalformed},
		{"truncated header", good[:20], ErrMalformed},
		{"truncated data", good[:len(good)-100], ErrMalformed},
		{"arch", rewrite(func(w *gguf.Writer, _ *gguf.File) { w.Set("general.architecture", "mamba") }), ErrUnsupported},
		{"tokenizer", rewrite(func(w *gguf.Writer, _ *gguf.File) { w.Set("tokenizer.ggml.model", "rwkv") }), ErrUnsupported},
		{"missing tensor", rewrite(dropTensor("blk.1.ffn_up.weight")), ErrMissingTensor},
		{"tensor type", rewrite(func(w *gguf.Writer, _ *gguf.File) { w.SetTensorType(3, 9) }), ErrUnsupported},
		{"shape", rewrite(func(w *gguf.Writer, _ *gguf.File) { w.Set("llama.feed_forward_length", uint32(128)) }), ErrShape},
		{"heads", rewrite(func(w *gguf.Writer, _ *gguf.File) { w.Set("llama.attention.head_count_kv", uint32(3)) }), ErrShape},
	}
	for _, tc := range cases {
		_, err := Load(write(tc.name+".gguf", tc.data), LoadOptions{})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Errorf("%s: error %v does not name the file", tc.name, err)
		}
	}

	bin, err := os.ReadFile(testmodels.Path(t, "stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	tok := testmodels.Path(t, "tok512.bin")
	for name, tc := range map[string]struct {
		data []byte
		tok  string
		want error
	}{
		"llama2c truncated":     {bin[:len(bin)/2], tok, ErrMalformed},
		"llama2c tiny":          {bin[:10], tok, ErrMalformed},
		"llama2c no tokenizer":  {bin, "", ErrMalformed},
		"llama2c bad tokenizer": {bin, write("tok", []byte{1, 2, 3}), ErrMalformed},
		"llama2c bad header":    {append([]byte{0, 0, 0, 0}, bin[4:]...), tok, ErrShape},
	} {
		_, err := Load(write(name, tc.data), LoadOptions{Format: "llama2c", Tokenizer: tc.tok})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "absent"), LoadOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

// TestArchTable: unknown architectures and features batchd does not run
// (a rope scaling it lacks, Phi-3's LongRoPE factors) are refused by name;
// a Llama 3.1 rope_freqs tensor is loaded as the RoPE factors.
func TestArchTable(t *testing.T) {
	_, err := LookupArch("mamba")
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"mamba"`) {
		t.Fatalf("mamba: %v", err)
	}
	for name := range archTable { // the refusal lists what batchd runs
		if !strings.Contains(err.Error(), name) {
			t.Errorf("mamba: %v does not name %s", err, name)
		}
	}
	path, good := synth.WriteFile(t, synth.Tiny(quant.F32, 64, 1))
	load := func(edit func(w *gguf.Writer, f *gguf.File)) (*Model, error) {
		if err := os.WriteFile(path, rewriteGGUF(t, good, edit), 0o644); err != nil {
			t.Fatal(err)
		}
		return Load(path, LoadOptions{})
	}
	factors := make([]byte, 8*4) // rope dim 16 of the tiny model: 8 pairs
	for i := range 8 {
		binary.LittleEndian.PutUint32(factors[4*i:], math.Float32bits(float32(i+1)))
	}
	m, err := load(func(w *gguf.Writer, _ *gguf.File) {
		w.AddTensor("rope_freqs.weight", gguf.Type(quant.F32), []uint64{8}, factors)
	})
	if err != nil || !slices.Equal(m.RopeFactors, []float32{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("rope_freqs: %v, factors %v", err, m)
	}
	m.Close()
	if _, err := load(func(w *gguf.Writer, f *gguf.File) { w.Set("llama.rope.scaling.type", "longrope") }); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "longrope") {
		t.Fatalf("longrope: %v", err)
	}
	if _, err := load(func(w *gguf.Writer, _ *gguf.File) {
		w.AddTensor("rope_factors_long.weight", gguf.Type(quant.F32), []uint64{8}, factors)
	}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "rope_factors_long") {
		t.Fatalf("LongRoPE: %v", err)
	}
}

// TestUnsupportedTypeIsOneLine: a file whose tensors use a type batchd has
// no entry for gets one line naming the type and the tensor count, and what
// is supported (it was one line per tensor).
func TestUnsupportedTypeIsOneLine(t *testing.T) {
	path, good := synth.WriteFile(t, synth.Tiny(quant.F32, 64, 1))
	n := 0
	b := rewriteGGUF(t, good, func(w *gguf.Writer, f *gguf.File) {
		for i, tt := range f.Tensors {
			if len(tt.Dims) == 2 {
				w.SetTensorType(i, 9) // Q8_1
				n++
			}
		}
	})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, LoadOptions{})
	if !errors.Is(err, ErrUnsupported) || strings.Count(err.Error(), "\n") != 0 ||
		!strings.Contains(err.Error(), fmt.Sprintf("%d tensors of type Q8_1", n)) || !strings.Contains(err.Error(), "Q4_K") {
		t.Fatalf("got %q", err)
	}
}

// rewriteGGUF copies the GGUF in good through a Writer (metadata of the
// types the writer takes, every tensor), lets mut change it, and returns the
// new file's bytes.
func rewriteGGUF(t *testing.T, good []byte, mut func(w *gguf.Writer, f *gguf.File)) []byte {
	t.Helper()
	f, err := gguf.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriterFrom(f, good)
	mut(w, f)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
