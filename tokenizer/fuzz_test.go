package tokenizer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/batchd/batchd/testing/testmodels"
)

// FuzzTokenize: any bytes (invalid UTF-8 included) tokenize without a
// panic under every pre-tokenizer family and special-token mode, and valid
// text decodes back to itself with a byte-level BPE vocabulary that spells
// every byte.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"", "Hello world", "<|im_start|>x<|im_end|>", "\xff\xfe", "  \n\t\r\n 123456 'll", "東京🦙\u00a0é"} {
		f.Add(s, true)
	}
	dir := filepath.Join(testmodels.Dir(f), "vocab")
	var toks []*Tokenizer
	for _, name := range []string{"ggml-vocab-qwen2.gguf", "ggml-vocab-deepseek-coder.gguf", "ggml-vocab-falcon.gguf", "ggml-vocab-llama-spm.gguf"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			toks = append(toks, loadVocab(f, filepath.Join(dir, name)))
		}
	}
	if len(toks) == 0 {
		f.Skip("no vocab files")
	}
	f.Fuzz(func(t *testing.T, text string, special bool) {
		for _, tok := range toks {
			ids, err := tok.Tokenize(context.Background(), text, Options{AddSpecial: special, ParseSpecial: special})
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			if tok.Kind() == BPE && !special && utf8.ValidString(text) && spellsEveryByte(tok) {
				if got := tok.Decode(-1, ids); got != text {
					t.Fatalf("%q decodes to %q", text, got)
				}
			}
		}
	})
}

// spellsEveryByte: the vocabulary has a token for each byte (some, like
// deepseek-coder's, lack control bytes, which llama.cpp then drops).
func spellsEveryByte(t *Tokenizer) bool {
	for _, id := range t.bpe.byteTok {
		if id < 0 {
			return false
		}
	}
	return true
}
