package model

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/testing/testmodels"
)

// ggufNoTensors writes a GGUF with one string key and no tensors, ending
// right after its metadata, as llama.cpp writes vocabulary-only files.
func ggufNoTensors() []byte {
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	str := func(s string) { le(uint64(len(s))); b.WriteString(s) }
	b.WriteString("GGUF")
	le(uint32(3))
	le(uint64(0)) // tensors
	le(uint64(1)) // keys
	str("general.architecture")
	le(uint32(8)) // string
	str("llama")
	return b.Bytes()
}

// TestParseGGUFWithoutTensors: a vocabulary-only file has no padding after
// its metadata; it was rejected with "data section starts at N past the end".
func TestParseGGUFWithoutTensors(t *testing.T) {
	b := ggufNoTensors()
	if len(b)%gguf.DefaultAlignment == 0 {
		t.Fatalf("test file of %d bytes is aligned; it must not be", len(b))
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if arch, _ := f.MetaString("general.architecture"); arch != "llama" || len(f.Tensors) != 0 || f.DataOffset != uint64(len(b)) {
		t.Fatalf("parsed %q, %d tensors, data at %d of %d", arch, len(f.Tensors), f.DataOffset, len(b))
	}
}

// TestParseLlamaCppVocabFiles parses llama.cpp's own vocabulary-only files.
func TestParseLlamaCppVocabFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testmodels.Dir(t), "vocab", "*.gguf"))
	if len(files) == 0 {
		t.Skip("no vocab/*.gguf in the model directory")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse(b)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		if _, ok := f.Meta["tokenizer.ggml.tokens"]; !ok {
			t.Errorf("%s: no tokenizer.ggml.tokens", filepath.Base(p))
		}
	}
}
