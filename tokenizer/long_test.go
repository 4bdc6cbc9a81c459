package tokenizer

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// longText is n bytes of English-like words (the 24 KB prompt of issue 14).
func longText(n int) string {
	words := []string{"the", "little", "girl", "went", "to", "park", "and", "saw", "a", "big", "dog", "Once",
		"upon", "time", "there", "was", "happy", "cat", "named", "Tom", "who", "liked", "play", "ball", "."}
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// BenchmarkEncode24KB prints the time to tokenize a 24 KB prompt with the
// 32k Llama 2 vocabulary (22 s of one core with the quadratic merge loop).
func BenchmarkEncode24KB(b *testing.B) {
	tok, err := LoadLlama2c(testmodels.Path(b, "tokenizer32k.bin"), 32000)
	if err != nil {
		b.Fatal(err)
	}
	text := longText(24 << 10)
	for b.Loop() {
		tok.Encode(text, true)
	}
}

// mergeQuadratic is run.c's merge loop, the reference the queue must match.
func mergeQuadratic(t *Tokenizer, toks []int, start int) []int {
	for {
		best, bestID, bestIdx := float32(0), -1, -1
		for i := start; i+1 < len(toks); i++ {
			if t.types[toks[i]] == TokenByte || t.types[toks[i+1]] == TokenByte {
				continue
			}
			id, ok := t.lookup[t.pieces[toks[i]]+t.pieces[toks[i+1]]]
			if ok && (bestIdx < 0 || t.scores[id] > best) {
				best, bestID, bestIdx = t.scores[id], id, i
			}
		}
		if bestIdx < 0 {
			return toks
		}
		toks[bestIdx] = bestID
		toks = append(toks[:bestIdx+1], toks[bestIdx+2:]...)
	}
}

// TestMergeMatchesQuadraticLoop: on random text (words, punctuation,
// accented letters, emoji outside the vocab, repeats that make ties) the
// priority-queue merge gives exactly the tokens of run.c's loop.
func TestMergeMatchesQuadraticLoop(t *testing.T) {
	tok, err := LoadLlama2c(testmodels.Path(t, "tokenizer32k.bin"), 32000)
	if err != nil {
		t.Fatal(err)
	}
	small, err := LoadLlama2c(testmodels.Path(t, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	parts := []string{"the", " ", "  ", "aaaa", "ll", "é", "ü", "日本", "🦙", "\n", ".", ",", "Hello", "world", "0", "123",
		"ing", "tion", "\t", "x"}
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		text := b.String()
		for _, tk := range []*Tokenizer{tok, small} {
			got := tk.Encode(text, trial%2 == 0)
			// The same symbols, merged the quadratic way.
			ref := tk.Encode("", trial%2 == 0)
			var want []int
			if text == "" {
				want = ref
			} else {
				want = mergeQuadratic(tk, tk.symbols(ref, " "+text), len(ref))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%q (vocab %d): got %v, want %v", text, tk.VocabSize(), got, want)
			}
		}
	}
}

// TestEncodeStopsWithContext: a cancelled context ends a long encode.
func TestEncodeStopsWithContext(t *testing.T) {
	tok, err := LoadLlama2c(testmodels.Path(t, "tokenizer32k.bin"), 32000)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tok.EncodeContext(ctx, longText(64<<10), true); err != context.Canceled {
		t.Fatalf("EncodeContext after cancel: %v", err)
	}
	text := longText(1000)
	if n, real := tok.MinTokens(text), len(tok.Encode(text, false)); n < 1 || n > real {
		t.Fatalf("MinTokens(1000 bytes) = %d, but it encodes to %d", n, real)
	}
}
