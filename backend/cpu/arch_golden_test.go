package cpu

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/tokenizer"
)

// logSoftmax returns log-probabilities of logits (float64 sums).
func logSoftmax(logits []float32) []float64 {
	mx := float64(logits[0])
	for _, v := range logits {
		mx = max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	out := make([]float64, len(logits))
	lse := mx + math.Log(sum)
	for i, v := range logits {
		out[i] = float64(v) - lse
	}
	return out
}

// TestArchMatchesLlamaCpp: for every tiny model in models/arch, the prompt
// tokenizes to llama.cpp's tokens, every greedy step's top-5
// log-probabilities are within 1e-3 of llama.cpp's, and the greedy tokens
// are llama.cpp's except where its top two are within 1e-4 (a near tie; the
// test says where). F32 KV, as the references were made.
func TestArchMatchesLlamaCpp(t *testing.T) {
	testArchGoldens(t, "arch", testmodels.ArchModels)
}

// TestArch2MatchesLlamaCpp is TestArchMatchesLlamaCpp on models/arch2,
// the newer families (mixtures of experts first), whose goldens are
// llama.cpp v0.5.0's.
func TestArch2MatchesLlamaCpp(t *testing.T) {
	var archs []string
	for _, a := range testmodels.Arch2Models {
		if a != "gemma3" { // ggml's GELU table: TestGemma3MatchesLlamaCpp, within 2e-3
			archs = append(archs, a)
		}
	}
	testArchGoldens(t, "arch2", archs)
}

func testArchGoldens(t *testing.T, dir string, archs []string) {
	for _, arch := range archs {
		t.Run(arch, func(t *testing.T) {
			goldens := testmodels.ArchGoldensFile(t, filepath.Join(dir, "tiny-"+arch+".golden.json"))
			m, err := model.Load(filepath.Join(testmodels.Dir(t), dir, "tiny-"+arch+".gguf"), model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			b, err := New(m, backend.Options{NumBlocks: 32, BlockSize: 16, KV: backend.SameKV(quant.F32)})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			worst := 0.0
			for _, g := range goldens {
				prompt, err := m.Tokenizer.Tokenize(context.Background(), g.Prompt, tokenizer.Options{AddSpecial: true, ParseSpecial: true})
				if err != nil || !slices.Equal(prompt, g.PromptTokens) {
					t.Fatalf("%q: prompt tokens %v (%v), want %v", g.Prompt, prompt, err, g.PromptTokens)
				}
				if len(prompt) == 0 {
					continue
				}
				worst = max(worst, checkArchSteps(t, b, m, g))
			}
			t.Logf("largest top-5 log-probability difference %.2g", worst)
		})
	}
}

// checkArchSteps runs one golden greedily and returns the largest top-5
// log-probability difference.
func checkArchSteps(t *testing.T, b *Backend, m *model.Model, g testmodels.ArchGolden) float64 {
	t.Helper()
	blocks := make([]int, b.numBlocks)
	for i := range blocks {
		blocks[i] = i
	}
	in := backend.SeqInput{Tokens: g.PromptTokens, Blocks: blocks, Logits: true}
	worst := 0.0
	for i := range g.Top5 {
		logits, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{in}})
		if err != nil {
			t.Fatal(err)
		}
		lp := logSoftmax(logits[0])
		for _, e := range g.Top5[i] {
			d := math.Abs(lp[int(e[0])] - e[1])
			worst = max(worst, d)
			if d > 1e-3 {
				t.Fatalf("%q step %d: token %d log-prob %.6f, llama.cpp %.6f", g.Prompt, i, int(e[0]), lp[int(e[0])], e[1])
			}
		}
		next := sample.Argmax(logits[0])
		if i < len(g.OutputTokens) && next != g.OutputTokens[i] {
			if !g.NearTie(i) {
				t.Fatalf("%q step %d: token %d, llama.cpp %d", g.Prompt, i, next, g.OutputTokens[i])
			}
			t.Logf("%q step %d: a near tie (gap %.2g): took %d, llama.cpp %d; stopping this prompt", g.Prompt, i, g.Gap12[i], next, g.OutputTokens[i])
			return worst
		}
		if m.IsStop(next) {
			break
		}
		in = backend.SeqInput{Tokens: []int{next}, Pos: in.Pos + len(in.Tokens), Blocks: blocks, Logits: true}
	}
	return worst
}
