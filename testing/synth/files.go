package synth

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/quant"
)

// Tiny is the tests' model shape: dim 64, 2 layers, 4 query and 2 KV heads,
// FFN 96 and a synthesized 300-piece vocabulary, with matrices of type dt.
// Formats with 256-value blocks (the K-quants, IQ4_XS) get dim 256 and FFN
// 512, the smallest shape their rows fit.
func Tiny(dt quant.DType, ctx int, seed uint64) Options {
	o := Options{Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 300, Context: ctx, DType: dt, Seed: seed}
	if f := quant.Lookup(dt); f != nil && f.BlockElems > 32 {
		o.Dim, o.FFN = f.BlockElems, 2*f.BlockElems
	}
	return o
}

// TinyMoE is Tiny as a mixture of experts laid out as qwen3moe files
// are: 8 experts of the FFN's width, 2 of them used per token.
func TinyMoE(dt quant.DType, ctx int, seed uint64) Options {
	o := Tiny(dt, ctx, seed)
	o.Arch, o.Experts, o.ExpertsUsed, o.ExpertFFN, o.RouterStd = "qwen3moe", 8, 2, o.FFN, 0.5
	return o
}

// WriteFile writes the model o describes into a temp dir of tb and returns
// its path and bytes.
func WriteFile(tb testing.TB, o Options) (string, []byte) {
	tb.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, o); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "synth.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path, buf.Bytes()
}

// TinyFile writes a Tiny F32 model with context ctx and returns its path:
// for tests of behaviour that needs no real weights (they run without ../shared).
func TinyFile(tb testing.TB, ctx int) string {
	tb.Helper()
	path, _ := WriteFile(tb, Tiny(quant.F32, ctx, 1))
	return path
}

// TinyReranker writes Tiny as a Qwen3-Reranker-shaped file (yes/no head,
// softmax, a plain rerank template) and returns its path: for tests of
// the rerank routes that need no real weights.
func TinyReranker(tb testing.TB, ctx int) string {
	tb.Helper()
	o := Tiny(quant.F32, ctx, 2)
	o.Arch = "qwen3"
	_, base := WriteFile(tb, o)
	var buf bytes.Buffer
	ro := RankOptions{Labels: []string{"yes", "no"}, Template: "Query: {query}\nDocument: {document}\nRelevant:", DType: quant.F32, Seed: 3}
	if err := WriteReranker(&buf, base, ro); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "rerank.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}
