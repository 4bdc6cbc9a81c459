package synth

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestMixMatchesLlamaQuantize: a Q4_K_M mix of models/quant's shape has
// the tensor types llama-quantize gave that model's Q4_K_M file.
func TestMixMatchesLlamaQuantize(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "quant", "tiny-quant-Q4_K_M-mix.gguf"))
	if err != nil {
		t.Skip(err)
	}
	ref, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Dim: 256, Layers: 2, Heads: 4, KVHeads: 4, FFN: 512, Vocab: 512, Context: 64, DType: quant.Q4_K, Mix: "q4_k_m", Seed: 1}
	var buf bytes.Buffer
	if err := Write(&buf, o); err != nil {
		t.Fatal(err)
	}
	got, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rt := range ref.Tensors {
		gt, ok := got.Tensor(rt.Name)
		if !ok {
			t.Errorf("%s: not written", rt.Name)
			continue
		}
		if gt.Type != rt.Type {
			t.Errorf("%s: %s, llama-quantize chose %s", rt.Name, gt.Type, rt.Type)
		}
		n++
	}
	if n != len(got.Tensors) {
		t.Errorf("wrote %d tensors, llama.cpp's file has %d", len(got.Tensors), n)
	}
}

func TestMixNeedsItsDType(t *testing.T) {
	o := Tiny(quant.Q4_0, 64, 1)
	o.Mix = "q4_k_m"
	if err := Write(&bytes.Buffer{}, o); err == nil {
		t.Fatal("a q4_k_m mix over Q4_0 was written")
	}
}
