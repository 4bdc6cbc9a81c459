package cpu

import (
	"slices"
	"testing"

	"github.com/batchd/batchd/engine/backend"
	"github.com/batchd/batchd/engine/model"
	"github.com/batchd/batchd/engine/quant"
	"github.com/batchd/batchd/engine/sample"
	"github.com/batchd/batchd/testing/testmodels"
)

func loadStories(t testing.TB, format string) *model.Model {
	t.Helper()
	var m *model.Model
	var err error
	switch format {
	case "llama2c":
		m, err = model.Load(testmodels.Path(t, "stories260K.bin"), model.LoadOptions{Tokenizer: testmodels.Path(t, "tok512.bin")})
	case "gguf":
		m, err = model.Load(testmodels.Path(t, "stories260K.gguf"), model.LoadOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// greedy runs one sequence alone, prompt in one prefill step, then decodes.
func greedy(t testing.TB, b *Backend, prompt []int, maxTokens int) []int {
	t.Helper()
	blocks := make([]int, b.numBlocks)
	for i := range blocks {
		blocks[i] = i
	}
	var out []int
	in := backend.SeqInput{Tokens: prompt, Pos: 0, Blocks: blocks, Logits: true}
	for len(out) < maxTokens {
		logits, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{in}})
		if err != nil {
			t.Fatal(err)
		}
		next := sample.Argmax(logits[0])
		// The goldens are run.c's, which also stops on BOS.
		if b.m.IsStop(next) || next == b.m.Tokenizer.BOS {
			break
		}
		out = append(out, next)
		in = backend.SeqInput{Tokens: []int{next}, Pos: in.Pos + len(in.Tokens), Blocks: blocks, Logits: true}
	}
	return out
}

// TestGoldenGenerations: both formats reproduce the reference exactly, with
// K and V kept as half floats (the default, as llama.cpp keeps them, and
// llama.cpp matches these goldens) and as float32.
func TestGoldenGenerations(t *testing.T) { goldenGenerations(t, "") }

func goldenGenerations(t *testing.T, kernels string) {
	goldens := testmodels.Goldens(t)
	for _, tc := range []struct {
		format string
		kv     quant.DType
	}{{"llama2c", quant.F16}, {"gguf", quant.F16}, {"llama2c", quant.F32}, {"gguf", quant.F32}} {
		t.Run(tc.format+"/kv-"+tc.kv.String(), func(t *testing.T) {
			m := loadStories(t, tc.format)
			b, err := New(m, backend.Options{NumBlocks: 32, BlockSize: 16, KVType: tc.kv, Kernels: kernels})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for _, g := range goldens {
				prompt := m.Tokenizer.Encode(g.Prompt, true)
				if !slices.Equal(prompt, g.PromptTokens) {
					t.Fatalf("%q: prompt tokens %v, want %v", g.Prompt, prompt, g.PromptTokens)
				}
				out := greedy(t, b, prompt, g.MaxTokens())
				if !slices.Equal(out, g.OutputTokens) {
					t.Fatalf("%q: output differs at %d:\n got %v\nwant %v", g.Prompt, firstDiff(out, g.OutputTokens), out, g.OutputTokens)
				}
				if text := m.Tokenizer.Decode(prompt[len(prompt)-1], out); text != g.Text {
					t.Fatalf("%q: text\n got %q\nwant %q", g.Prompt, text, g.Text)
				}
			}
		})
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
