package cpu

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestEncoderHiddenStatesMatchLlamaCpp: the encoders' un-pooled final
// hidden states (llama-server with --pooling none) for each token, within
// the references' tolerance, and the same rows whether the texts run
// alone or side by side in one step.
func TestEncoderHiddenStatesMatchLlamaCpp(t *testing.T) {
	for _, name := range []string{"tiny-bert-bge", "tiny-nomic-bert"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(testmodels.Dir(t), "embed")
			raw, err := os.ReadFile(filepath.Join(dir, name+".embed.json"))
			if err != nil {
				t.Skipf("no embedding reference: %v", err)
			}
			var ref struct {
				Texts []struct {
					Tokens []int `json:"tokens"`
				} `json:"texts"`
				Rows []struct {
					Index int         `json:"index"`
					Rows  [][]float32 `json:"rows"`
				} `json:"token_embeddings"`
				Tolerance struct {
					Rows float64 `json:"token_embeddings_max_abs"`
				} `json:"tolerance_recommended"`
			}
			if err := json.Unmarshal(raw, &ref); err != nil || len(ref.Rows) == 0 || ref.Tolerance.Rows == 0 {
				t.Fatalf("reference: %d row sets, tolerance %g: %v", len(ref.Rows), ref.Tolerance.Rows, err)
			}
			m, err := model.Load(filepath.Join(dir, name+".gguf"), model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			b, err := New(m, backend.Options{NumBlocks: 64, BlockSize: 16, KV: backend.SameKV(quant.F32)})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			dim, next := m.Config.Dim, 0
			share := func(toks []int) backend.SeqInput {
				n := (len(toks) + 15) / 16
				s := backend.SeqInput{Tokens: toks, Blocks: make([]int, n), Hidden: true, PromptLen: len(toks)}
				for i := range s.Blocks {
					s.Blocks[i] = next % 64
					next++
				}
				return s
			}
			var together backend.Batch
			alone := make([][]float32, len(ref.Rows))
			worst := 0.0
			for k, r := range ref.Rows {
				toks := ref.Texts[r.Index].Tokens
				out, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{share(toks)}})
				if err != nil {
					t.Fatal(err)
				}
				alone[k] = append([]float32(nil), out[0]...)
				if len(r.Rows) != len(toks) {
					t.Fatalf("text %d: %d reference rows for %d tokens", r.Index, len(r.Rows), len(toks))
				}
				for i, row := range r.Rows {
					for j, v := range row {
						worst = max(worst, math.Abs(float64(alone[k][i*dim+j]-v)))
					}
				}
				together.Seqs = append(together.Seqs, share(toks))
			}
			t.Logf("%d texts, max |diff| of a token's row from llama.cpp %.2g", len(ref.Rows), worst)
			if worst > ref.Tolerance.Rows {
				t.Errorf("max |diff| %g over %g", worst, ref.Tolerance.Rows)
			}
			out, err := b.Forward(&together)
			if err != nil {
				t.Fatal(err)
			}
			for k := range alone {
				if !equalBits(out[k], alone[k]) {
					t.Errorf("text %d: rows differ side by side from alone", ref.Rows[k].Index)
				}
			}
			// A chunk past position 0, or logits, is refused: neither has a meaning here.
			bad := share(ref.Texts[ref.Rows[0].Index].Tokens)
			bad.Pos, bad.Tokens = 1, bad.Tokens[1:]
			if _, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{bad}}); !errors.Is(err, backend.ErrBadBatch) {
				t.Errorf("a chunk at position 1: %v, want ErrBadBatch", err)
			}
			bad = share(ref.Texts[ref.Rows[0].Index].Tokens)
			bad.Hidden, bad.Logits = false, true
			if _, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{bad}}); !errors.Is(err, backend.ErrBadBatch) {
				t.Errorf("logits from an encoder: %v, want ErrBadBatch", err)
			}
		})
	}
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
