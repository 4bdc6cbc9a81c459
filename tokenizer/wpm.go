package tokenizer

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/batchd/batchd/gguf"
)

// wpmSpace is the phantom space a word-initial WordPiece piece starts with
// in llama.cpp's BERT vocabularies (continuation pieces carry no "##").
const wpmSpace = "\u2581"

// wpmFromGGUF reads a WordPiece vocabulary (tokenizer.ggml.model "bert"):
// llama.cpp's defaults are [CLS] 101 as BOS, [SEP] 102 as the separator,
// [UNK] 100.
func wpmFromGGUF(f *gguf.File, raw []string, types []int32, id func(string, int) int) (*Tokenizer, error) {
	t := &Tokenizer{fim: [3]int{-1, -1, -1}, kind: WPM, pieces: raw, scores: make([]float32, len(raw)), types: types,
		lookup: make(map[string]int, len(raw)), BOS: id("tokenizer.ggml.bos_token_id", 101),
		EOS: id("tokenizer.ggml.eos_token_id", -1), Unknown: id("tokenizer.ggml.unknown_token_id", 100),
		sep: id("tokenizer.ggml.seperator_token_id", 102), AddBOS: true, maxPiece: 1}
	// BERT's normalizer, as llama.cpp reads it: lowercase unless the file
	// says not, accents stripped as lowercase is unless it says otherwise.
	t.wpm.lower = true
	if v, ok := f.Meta["tokenizer.ggml.normalizer.lowercase"].(bool); ok {
		t.wpm.lower = v
	}
	t.wpm.strip = t.wpm.lower
	if v, ok := f.Meta["tokenizer.ggml.normalizer.strip_accents"].(bool); ok {
		t.wpm.strip = v
	}
	for i, p := range raw {
		t.lookup[p] = i // a later duplicate wins, as in llama.cpp's map
		t.maxPiece = max(t.maxPiece, len(p))
	}
	if t.BOS >= 0 && t.types[t.BOS] == TokenNormal {
		t.types[t.BOS] = TokenControl
	}
	return t, nil
}

// encodeWPM appends the WordPiece tokens of one raw-text fragment, as
// llama.cpp's llm_tokenizer_wpm_session does: each word, with the phantom
// space before it, is split by greedy longest match from the left; a word
// with a position nothing matches is [UNK] whole.
func (t *Tokenizer) encodeWPM(ctx context.Context, text string, toks []int) ([]int, error) {
	for i, word := range wpmWords(text, t.wpm) {
		if i%256 == 255 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		w := wpmSpace + word
		start := len(toks)
		for i := 0; i < len(w); {
			j := min(len(w), i+t.maxPiece)
			for ; j > i; j-- {
				if id, ok := t.lookup[w[i:j]]; ok {
					toks = append(toks, id)
					break
				}
			}
			if j == i { // nothing matches here: the whole word is unknown
				toks = toks[:start]
				break
			}
			i = j
		}
		if len(toks) == start {
			toks = append(toks, t.Unknown)
		}
	}
	return toks, nil
}

// wpmNorm is BERT's normalisation: lowercase, and strip accents (each
// codepoint mapped to the first of its canonical decomposition, marks
// dropped).
type wpmNorm struct{ lower, strip bool }

// wpmWords is llama.cpp's WordPiece preprocessing: with strip, each
// codepoint mapped to the first codepoint of its canonical decomposition
// (a precomposed letter loses its accent, a Hangul syllable keeps its
// leading consonant) and marks (\p{M}: combining accents, Indic vowel
// signs) dropped; with lower, lowercased; whitespace splits words; NUL,
// U+FFFD and control characters are dropped; punctuation, ASCII symbols
// and CJK ideographs are words of their own.
func wpmWords(text string, o wpmNorm) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range text {
		if o.strip {
			r = wpmNFD(r)
		}
		switch {
		case unicode.IsSpace(r):
			flush()
			continue
		case r == 0 || r == utf8.RuneError || unicode.In(r, unicode.C):
			continue
		case o.strip && unicode.In(r, unicode.M):
			continue
		}
		lower := r
		if o.lower {
			lower = unicode.ToLower(r)
		}
		if unicode.IsPunct(r) || r < 0x7F && unicode.IsSymbol(r) || isCJK(r) {
			flush()
			words = append(words, string(lower))
			continue
		}
		cur.WriteRune(lower)
	}
	flush()
	return words
}

// wpmNFD is the first codepoint of r's canonical decomposition (r itself
// when it has none), as llama.cpp's NFD table maps it.
func wpmNFD(r rune) rune {
	if r < 0xC0 {
		return r // nothing below U+00C0 decomposes
	}
	if r >= 0xAC00 && r <= 0xD7A3 {
		// A Hangul syllable decomposes by arithmetic, not by the tables
		// x/text reads: its first codepoint is the leading consonant.
		return 0x1100 + (r-0xAC00)/588
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	d := norm.NFD.Properties(buf[:n]).Decomposition()
	if len(d) == 0 {
		return r
	}
	first, _ := utf8.DecodeRune(d)
	return wpmNFD(first) // a decomposition's first codepoint may decompose again
}

// isCJK is llama.cpp's is_chinese_char (its 0x2B920 bound, as Hugging
// Face's Rust code has it).
func isCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F || r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}
