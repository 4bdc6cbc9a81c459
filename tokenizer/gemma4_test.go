package tokenizer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/testmodels"
)

// spmMerges derives BPE merges from a SentencePiece vocabulary, as a
// converter of such a model to BPE does: every split of a normal piece
// into two pieces is a merge, ranked by the merged piece's score (best
// first), then by the parts' ids.
func spmMerges(pieces []string, scores []float32, types []int32) []string {
	id := make(map[string]int, len(pieces))
	for i, p := range pieces {
		if types[i] == TokenNormal {
			id[p] = i
		}
	}
	type merge struct{ whole, l, r int }
	var ms []merge
	for w, p := range pieces {
		if types[w] != TokenNormal {
			continue
		}
		for j := 1; j < len(p); j++ {
			l, okl := id[p[:j]]
			r, okr := id[p[j:]]
			if okl && okr {
				ms = append(ms, merge{w, l, r})
			}
		}
	}
	slices.SortStableFunc(ms, func(a, b merge) int {
		if scores[a.whole] != scores[b.whole] {
			if scores[a.whole] > scores[b.whole] {
				return -1
			}
			return 1
		}
		if a.l != b.l {
			return a.l - b.l
		}
		return a.r - b.r
	})
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = pieces[m.l] + " " + pieces[m.r]
	}
	return out
}

// TestGemma4MatchesLlamaCpp: llama.cpp's Llama SentencePiece test
// vocabulary, with merges derived from its scores and its model named
// "gemma4", tokenizes llama.cpp's test texts and more (spaces, runs of
// newlines, characters only byte tokens spell) into the ids llama.cpp
// v0.5.0 gives, with BOS added as llama.cpp forces it; the ids decode
// back to the text.
func TestGemma4MatchesLlamaCpp(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "vocab")
	src := filepath.Join(dir, "ggml-vocab-llama-spm.gguf")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skip(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	pieces := f.Meta["tokenizer.ggml.tokens"].([]string)
	scores := f.Meta["tokenizer.ggml.scores"].([]float32)
	types := f.Meta["tokenizer.ggml.token_type"].([]int32)
	merges := spmMerges(pieces, scores, types)
	path := filepath.Join(t.TempDir(), "gemma4.gguf")
	llamacpp.Rewrite(t, src, path, map[string]any{
		"tokenizer.ggml.model": "gemma4", "tokenizer.ggml.merges": merges, "tokenizer.ggml.add_bos_token": false,
	})
	tok := loadVocab(t, path)
	if !tok.AddBOS || tok.Kind() != BPE {
		t.Fatalf("gemma4 vocabulary: AddBOS %v, kind %v; want BOS added, BPE", tok.AddBOS, tok.Kind())
	}
	texts, _ := readVocabCase(t, filepath.Join(dir, "ggml-vocab-llama-spm.gguf.inp"), filepath.Join(dir, "ggml-vocab-llama-spm.gguf.out"))
	texts = append(texts, preTokenizerTexts...)
	texts = append(texts, "\n", "\n\n\n", " \n \n\n x\n", "a\n\n\nb", "   ", "tab\there", "\u0800\U0001F600\u00ff")
	ref := llamacpp.New(t, llamacpp.Options{})
	if _, err := ref.LoadModel(path, true); err != nil {
		t.Fatal(err)
	}
	for _, text := range texts {
		want, err := ref.Tokenize(text, true, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tok.Tokenize(context.Background(), text, Options{AddSpecial: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			i := firstDifference(got, want)
			t.Errorf("%q: ids differ from llama.cpp's at %d: got %v, want %v", text, i, got[i:min(i+6, len(got))], want[i:min(i+6, len(want))])
			continue
		}
		if back := tok.Decode(tok.BOS, got[1:]); back != text && utf8Valid(text) {
			t.Errorf("%q decodes as %q", text, back)
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
