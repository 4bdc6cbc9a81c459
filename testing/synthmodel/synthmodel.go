// Package synthmodel writes tiny random-weight models for tests of behaviour
// that does not depend on real weights, so that they run in a clone without
// ../shared. (A package of its own: engine/model's tests import testmodels.)
package synthmodel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/engine/quant"
	"github.com/batchd/batchd/testing/synth"
)

// Write writes a tiny random-weight Llama GGUF (a synthesized byte-fallback
// vocabulary of 300 pieces, context ctx) into a temp dir and returns its path.
func Write(tb testing.TB, ctx int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "synth.gguf")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	o := synth.Options{Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 300, Context: ctx,
		DType: quant.F32, Seed: 1}
	if err := synth.Write(f, o); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}
