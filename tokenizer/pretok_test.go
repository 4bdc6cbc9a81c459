package tokenizer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestPatternSourcesAreASCII: the pre-tokenizer patterns spell every
// non-ASCII character as an escape. Unicode normalization turned DeepSeek
// LLM's U+1F7D into U+03CE once, a range in reverse order that refused
// every such model at load, and U+212A (Kelvin) into K, which would have
// made ASCII punctuation letters.
func TestPatternSourcesAreASCII(t *testing.T) {
	for _, name := range []string{"pretok.go", "pretok_custom.go"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, r := range line {
				if r > 0x7F {
					t.Errorf("%s:%d: %U %q: write it as an escape", name, i+1, r, r)
				}
			}
		}
	}
}

// TestEveryPreTokenizerCompiles: every name batchd accepts builds.
func TestEveryPreTokenizerCompiles(t *testing.T) {
	for _, name := range PreTokenizers() {
		if _, err := newPreTokenizer(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestDeepSeekLettersAreCasedLetters: DeepSeek LLM's letter class holds
// the characters that normalization would change, and no ASCII
// punctuation (which a collapsed K-U+212D range would take in).
func TestDeepSeekLettersAreCasedLetters(t *testing.T) {
	p, err := newPreTokenizer("deepseek-llm")
	if err != nil {
		t.Fatal(err)
	}
	letters := p.steps[1]
	for _, r := range []rune{'K', 0x1F7D, 0x1FBE, 0x1FD3, 0x1FDB, 0x2126, 0x212A, 0x10400} {
		if got, _ := letters.apply([]rune{r}, nil); !slices.Equal(got, []int{1}) {
			t.Errorf("%U is not in the letter class", r)
		}
	}
	// "a_b": the letters match a and b; the underscore is the gap between.
	if got, _ := letters.apply([]rune("a_b"), nil); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf(`"a_b" splits as %v, want [1 1 1]`, got)
	}
}

// preTokenizerTexts exercise every branch of the patterns: contractions
// in either case, letters of several scripts, digit runs, punctuation
// runs, CJK, and runs of whitespace mixing \n, \r, \t, U+00A0, U+3000
// before words and at the end.
var preTokenizerTexts = []string{
	"Hello world! It's DON'T we'll I'd you've 12345 and 1,000,000.50 $5+3<=8^2~|x`y",
	"  leading\n\n\ttabs\t\t and  double  spaces   \r\n\r\nCRLF",
	"\n\t\u00a0\u3000word \u00a0\u3000\n\tword\t\n\u3000\u00a0Word \u3000\u3000 x\u00a0\u00a0\n",
	"Ünïcödé café naïve Ωmega ΚΑΛΗΜΕΡΑ привет мир ὤ ᾳ \u212aelvin \u2126hm a_b [c]",
	"日本語のテキスト 中文文本 한국어 텍스트 ١٢٣ ٤٥ हिन्दी ไทย",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n// ¿Qué? ¡Sí! «quotes» “curly” — dash… ！？（全角）",
	"emoji 👍🏽 👨‍👩‍👧 and trailing spaces   ",
}

// TestPreTokenizersMatchLlamaCpp: for every pre-tokenizer name, a
// byte-level vocabulary (llama.cpp's gpt-2 test file) renamed to it
// tokenizes the texts into llama.cpp's ids. BPE never merges across a
// word boundary, so a split that differs shows up in the ids.
func TestPreTokenizersMatchLlamaCpp(t *testing.T) {
	ref := llamacpp.New(t, llamacpp.Options{})
	src := filepath.Join(testmodels.Dir(t), "vocab", "ggml-vocab-gpt-2.gguf")
	if _, err := os.Stat(src); err != nil {
		t.Skip(err)
	}
	text := strings.Join(preTokenizerTexts, "\n")
	dir := t.TempDir()
	for _, name := range PreTokenizers() {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".gguf")
			llamacpp.Rewrite(t, src, path, map[string]any{"tokenizer.ggml.pre": name})
			if _, err := ref.LoadModel(path, true); err != nil {
				t.Skipf("llama.cpp %s does not load pre-tokenizer %q: %v", llamacpp.Release, name, err)
			}
			want, err := ref.Tokenize(text, false, false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := loadVocab(t, path).Tokenize(context.Background(), text, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				i := firstDifference(got, want)
				t.Errorf("ids differ from llama.cpp's at %d: got %v, want %v", i, got[i:min(i+6, len(got))], want[i:min(i+6, len(want))])
			}
		})
	}
}

// TestWhitespaceRunsMatchLlamaCpp: the Llama 3 splitter (hand-written)
// and Qwen's pattern (regexp2) take runs of whitespace mixing \n, \r, \t,
// U+00A0, U+3000 and other Unicode spaces as llama.cpp does: at the start
// of a text, before a word, a number or punctuation, and at the end.
func TestWhitespaceRunsMatchLlamaCpp(t *testing.T) {
	ref := llamacpp.New(t, llamacpp.Options{})
	texts := []string{
		"\n\t\u00a0\u3000word", "\t\n\u00a0\u3000Hello", "\u00a0\u3000\n\tword", "\u3000\u00a0\t\nword",
		"x\n\t\u00a0\u3000word", "\u00a0\u00a0\u3000\u3000 7", "\t\u00a0\n\u3000 !!", "\r\n\u00a0\t\u3000\r\nend",
		"a \u2009\u205f\u1680\u0085b", "word\u00a0\u3000\n\t", "\u3000\u3000\u3000", " \u00a0 \u3000 \t \n 's",
		" \n \n\t \n  \u00a0 \u3000 end",
	}
	for _, v := range []string{"llama-bpe", "qwen2"} {
		path := filepath.Join(testmodels.Dir(t), "vocab", "ggml-vocab-"+v+".gguf")
		if _, err := os.Stat(path); err != nil {
			t.Skip(err)
		}
		tok := loadVocab(t, path)
		if _, err := ref.LoadModel(path, true); err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			want, err := ref.Tokenize(text, false, false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tok.Tokenize(context.Background(), text, Options{ParseSpecial: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %q: got %v, want llama.cpp's %v", v, text, got, want)
			}
		}
	}
}

func firstDifference(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if !utf8.ValidString(s) {
		return "(binary)"
	}
	return s
}
