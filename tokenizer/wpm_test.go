package tokenizer

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// TestWordPieceMatchesLlamaCpp: llama.cpp's WordPiece test vocabulary
// (BGE's) gives llama.cpp's ids on its 46 texts (add_special off), and
// on texts its README calls out: a precomposed accent is dropped, a
// separate combining mark makes the word [UNK], add_special wraps the ids
// in [CLS] and [SEP], typed [SEP] is the token only when parsed.
func TestWordPieceMatchesLlamaCpp(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "embed")
	tok := loadVocab(t, filepath.Join(dir, "ggml-vocab-bert-bge.gguf"))
	texts, want := readVocabCase(t, filepath.Join(dir, "ggml-vocab-bert-bge.gguf.inp"), filepath.Join(dir, "ggml-vocab-bert-bge.gguf.out"))
	bad := 0
	for i, text := range texts {
		got, err := tok.Tokenize(context.Background(), text, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[i]) {
			if bad++; bad <= 5 {
				t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d texts differ", bad, len(texts))
	}
	for _, tc := range []struct {
		text string
		o    Options
		want []int
	}{
		{"Café", Options{}, []int{7668}},
		{"Cafe\u0301", Options{}, []int{7668}}, // v0.5.0 drops marks (the old build's [UNK])
		{"Hello world", Options{AddSpecial: true}, []int{101, 7592, 2088, 102}},
		{"a [SEP] b", Options{ParseSpecial: true}, []int{1037, 102, 1038}},
		// Hangul syllables decompose by arithmetic (to their leading
		// consonant, as llama.cpp's NFD table keeps the first codepoint):
		// llama.cpp v0.5.0's ids; they were [UNK] here.
		{"서울특별시", Options{}, []int{1461, 29999, 30003, 29996, 29997}},
		{"한국어 텍스트", Options{}, []int{1469, 29991, 29999, 1467, 29997, 30003}},
	} {
		got, _ := tok.Tokenize(context.Background(), tc.text, tc.o)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q %+v: %v, want %v", tc.text, tc.o, got, tc.want)
		}
	}
	if got := tok.Decode(-1, []int{7592, 2088}); got != " hello world" {
		t.Errorf("decode: %q", got)
	}
}
