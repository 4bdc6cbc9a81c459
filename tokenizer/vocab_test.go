package tokenizer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/testmodels"
)

const vocabSep = "\n__ggml_vocab_test__\n"

// readVocabCase reads llama.cpp's test-tokenizer-0 files: texts each
// followed by the separator, and one line of ids per text.
func readVocabCase(t *testing.T, inp, out string) ([]string, [][]int) {
	t.Helper()
	ib, err := os.ReadFile(inp)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(ib), vocabSep)
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(ob), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d texts, %s: %d lines", inp, len(texts), out, len(lines))
	}
	ids := make([][]int, len(lines))
	for i, l := range lines {
		ids[i] = []int{}
		for _, f := range strings.Fields(l) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s line %d: %v", out, i+1, err)
			}
			ids[i] = append(ids[i], n)
		}
	}
	return texts, ids
}

func loadVocab(t testing.TB, path string) *Tokenizer {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	return tok
}

// TestLlamaCppVocabularies reproduces every .inp/.out pair in models/vocab
// (llama.cpp's ids, add_special off): .out with special-token strings as
// plain text, .special.out with them parsed. Each text must also decode
// back to itself where the vocabulary can spell it.
func TestLlamaCppVocabularies(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "vocab")
	inps, _ := filepath.Glob(filepath.Join(dir, "*.inp"))
	if len(inps) == 0 {
		t.Skip("no vocab/*.inp in the model directory")
	}
	toks := map[string]*Tokenizer{}
	for _, inp := range inps {
		base := strings.TrimSuffix(inp, ".inp")
		vocab := strings.TrimSuffix(strings.TrimSuffix(base, ".gguf"), ".extra") + ".gguf"
		tok := toks[vocab]
		if tok == nil {
			tok = loadVocab(t, vocab)
			toks[vocab] = tok
		}
		for _, mode := range []struct {
			suffix string
			parse  bool
		}{{".out", false}, {".special.out", true}} {
			out := base + mode.suffix
			if _, err := os.Stat(out); err != nil {
				continue
			}
			texts, want := readVocabCase(t, inp, out)
			name := filepath.Base(out)
			bad := 0
			for i, text := range texts {
				got, err := tok.Tokenize(context.Background(), text, Options{ParseSpecial: mode.parse})
				if err != nil {
					t.Fatalf("%s: %q: %v", name, text, err)
				}
				if !slices.Equal(got, want[i]) {
					if bad++; bad <= 3 {
						t.Errorf("%s text %d %q:\n got %v\nwant %v", name, i, text, got, want[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d texts differ", name, bad, len(texts))
			}
		}
	}
}

// TestVocabulariesMatchLlamaCppLive: every vocabulary in models/vocab and
// the WordPiece one in models/embed, on their test texts and the
// pre-tokenizer texts, special tokens parsed and not, against the
// llama.cpp of the reference issue (v0.5.0, from npm), live: the stored
// .out files stay as they were made, and this keeps the ids current.
func TestVocabulariesMatchLlamaCppLive(t *testing.T) {
	ref := llamacpp.New(t, llamacpp.Options{})
	dir := testmodels.Dir(t)
	vocabs, _ := filepath.Glob(filepath.Join(dir, "vocab", "*.gguf"))
	vocabs = append(vocabs, filepath.Join(dir, "embed", "ggml-vocab-bert-bge.gguf"))
	for _, path := range vocabs {
		if _, err := ref.LoadModel(path, true); err != nil {
			t.Errorf("%s: llama.cpp does not load it: %v", filepath.Base(path), err)
			continue
		}
		tok := loadVocab(t, path)
		eog, _, err := ref.Specials()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tok.EOG(), eog) {
			t.Errorf("%s: end-of-generation tokens %v, llama.cpp's %v", filepath.Base(path), tok.EOG(), eog)
		}
		texts := slices.Clone(preTokenizerTexts)
		texts = append(texts, "서울특별시 한국어", " \n \n\t \n  \u00a0 \u3000 end", "<|im_start|>user\nhi<|im_end|>", "<s>[INST] x [/INST]", "a</s>b <|end|> <eos>")
		if b, err := os.ReadFile(path + ".inp"); err == nil {
			inp := strings.Split(string(b), vocabSep)
			texts = append(texts, inp[:len(inp)-1]...)
		}
		bad := 0
		for _, text := range texts {
			for _, parse := range []bool{false, true} {
				want, err := ref.Tokenize(text, false, parse)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tok.Tokenize(context.Background(), text, Options{ParseSpecial: parse})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					if bad++; bad <= 3 {
						t.Errorf("%s (parse special %v) %q:\n got %v\nwant %v", filepath.Base(path), parse, text, got, want)
					}
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d texts differ", filepath.Base(path), bad, 2*len(texts))
		}
	}
}
