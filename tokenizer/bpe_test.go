package tokenizer

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/batchd/batchd/testing/testmodels"
)

func vocabPath(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(testmodels.Dir(t), "vocab", name)
}

// randomText mixes scripts, digits, whitespace runs, contractions, emoji
// and special-token strings, so every pre-tokenizer branch is taken.
func randomText(rng *rand.Rand, n int) string {
	parts := []string{"the", " ", "   ", "\n", "\r\n", "\t", "'s", "'LL", "123", "4567", "é", "Zürich", "東京", "🦙",
		"👍🏽", "\u00a0", "\u3000", "ab", "...", "!!", "<|im_end|>", "<|eot_id|>", "x", "Ω", "٣", "ا", "\u0301"}
	var b strings.Builder
	for range n {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

// TestBPERoundTrip: byte-level BPE spells every text exactly, so decoding
// its tokens gives the text back, for each BPE vocabulary; and the tokens
// of a text never depend on how it was cut (a special token's text with
// ParseSpecial off stays text).
func TestBPERoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, name := range []string{"ggml-vocab-llama-bpe.gguf", "ggml-vocab-qwen2.gguf", "ggml-vocab-gpt-2.gguf",
		"ggml-vocab-starcoder.gguf", "ggml-vocab-falcon.gguf", "ggml-vocab-deepseek-coder.gguf"} {
		tok := loadVocab(t, vocabPath(t, name))
		for range 200 {
			text := randomText(rng, rng.IntN(30))
			ids, err := tok.Tokenize(context.Background(), text, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Decode(-1, ids); got != text {
				t.Fatalf("%s: %q decodes to %q (ids %v)", name, text, got, ids)
			}
		}
	}
}

// TestSpecialTokens: with ParseSpecial a control token's text is that one
// token, without it plain text; the EOG sets are llama.cpp's (README of
// models/vocab); add_bos follows the vocabulary.
func TestSpecialTokens(t *testing.T) {
	for _, tc := range []struct {
		file   string
		text   string
		tokens []int // with ParseSpecial
		eog    []int
		bos    bool
	}{
		{"ggml-vocab-llama-bpe.gguf", "<|start_header_id|>user<|end_header_id|>", []int{128006, 882, 128007}, []int{128001, 128009}, true},
		{"ggml-vocab-qwen2.gguf", "<|im_start|>user\nhi<|im_end|>", []int{151644, 872, 198, 6023, 151645}, []int{128247, 151643, 151645, 151662, 151663, 151664}, false}, // v0.5.0 adds </s> (128247)
	} {
		tok := loadVocab(t, vocabPath(t, tc.file))
		got, _ := tok.Tokenize(context.Background(), tc.text, Options{ParseSpecial: true})
		if !slices.Equal(got, tc.tokens) {
			t.Errorf("%s: %q = %v, want %v", tc.file, tc.text, got, tc.tokens)
		}
		plain, _ := tok.Tokenize(context.Background(), tc.text, Options{})
		if len(plain) <= len(got) || tok.Decode(-1, plain) != tc.text {
			t.Errorf("%s: without ParseSpecial %v", tc.file, plain)
		}
		if !slices.Equal(tok.EOG(), tc.eog) {
			t.Errorf("%s: EOG %v, want %v", tc.file, tok.EOG(), tc.eog)
		}
		withBOS, _ := tok.Tokenize(context.Background(), "a", Options{AddSpecial: true})
		if (withBOS[0] == tok.BOS) != tc.bos {
			t.Errorf("%s: add_special gave %v (BOS %d)", tc.file, withBOS, tok.BOS)
		}
	}
}

// TestBPEScalesNLogN: one long word (no split point) and long mixed text
// each encode in time that grows about linearly: 8 times the length must
// take well under 64 times as long (quadratic), with the two sizes run in
// turn and the best of 3 taken, so a busy machine slows both alike.
func TestBPEScalesNLogN(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	tok := loadVocab(t, vocabPath(t, "ggml-vocab-qwen2.gguf"))
	timed := func(text string) time.Duration {
		t0 := time.Now()
		if _, err := tok.Tokenize(context.Background(), text, Options{}); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	best := func(a, b string) (time.Duration, time.Duration) {
		ba, bb := time.Duration(1<<62), time.Duration(1<<62)
		for range 3 {
			ba, bb = min(ba, timed(a)), min(bb, timed(b))
		}
		return ba, bb
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, gen := range []func(n int) string{
		func(n int) string { return strings.Repeat("abcdefghij", n/10) },
		func(n int) string { return strings.Repeat(" ", n) },
		func(n int) string { return randomText(rng, n/4)[:0] + strings.Repeat(randomText(rng, 64), n/256) },
	} {
		small, large := best(gen(32<<10), gen(256<<10))
		if large > 24*small+20*time.Millisecond {
			t.Errorf("32 KB %v, 256 KB %v: worse than n log n", small, large)
		}
	}
}

// TestBPEStopsWithContext: a cancelled context ends a long encode.
func TestBPEStopsWithContext(t *testing.T) {
	tok := loadVocab(t, vocabPath(t, "ggml-vocab-llama-bpe.gguf"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tok.Tokenize(ctx, strings.Repeat("word ", 1<<16), Options{}); err == nil {
		t.Fatal("no error from a cancelled context")
	}
}

// TestBPEStreamKeepsUTF8Whole: byte-level tokens split characters (an emoji
// is several tokens); streamed deltas are still whole characters and add
// up to the text.
func TestBPEStreamKeepsUTF8Whole(t *testing.T) {
	tok := loadVocab(t, vocabPath(t, "ggml-vocab-qwen2.gguf"))
	rng := rand.New(rand.NewPCG(7, 8))
	split := 0
	for range 200 {
		text := randomText(rng, 1+rng.IntN(20))
		ids, _ := tok.Tokenize(context.Background(), text, Options{})
		d := NewDetokenizer(tok, -1)
		var got strings.Builder
		for _, id := range ids {
			delta := d.Add(id)
			if !utf8.ValidString(delta) {
				t.Fatalf("%q: delta %q is not valid UTF-8", text, delta)
			}
			if !utf8.Valid(tok.TokenBytes(-1, id)) {
				split++
			}
			got.WriteString(delta)
		}
		got.WriteString(d.Flush())
		if got.String() != text {
			t.Fatalf("streamed %q, want %q", got.String(), text)
		}
	}
	if split == 0 {
		t.Fatal("no token split a character: the test proves nothing")
	}
}

// TestCoveringKeepsTheFirstTokens: the first n tokens of a long text are
// the first n tokens of Covering(text, n), which is far shorter (what an
// embedding that keeps n tokens tokenizes instead of megabytes).
func TestCoveringKeepsTheFirstTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, name := range []string{"ggml-vocab-llama-bpe.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"} {
		tok := loadVocab(t, vocabPath(t, name))
		text := randomText(rng, 60000)
		for _, n := range []int{16, 512} {
			short := tok.Covering(text, n)
			if len(short) >= len(text) || !strings.HasPrefix(text, short) || !utf8.ValidString(short) {
				t.Fatalf("%s: %d of %d bytes for %d tokens", name, len(short), len(text), n)
			}
			all, err := tok.Tokenize(context.Background(), text, Options{AddSpecial: true})
			if err != nil {
				t.Fatal(err)
			}
			cut, err := tok.Tokenize(context.Background(), short, Options{AddSpecial: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(all[:n], cut[:n]) {
				t.Errorf("%s: the first %d tokens differ", name, n)
			}
		}
	}
}
