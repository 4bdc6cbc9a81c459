package tokenizer

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/testing/testmodels"
)

func TestLlama2Tokenizer(t *testing.T) {
	tok, err := LoadLlama2c(testmodels.Path(t, "tokenizer32k.bin"), 32000)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []int
	}{
		{"", []int{1}},
		{"Hello world", []int{1, 15043, 3186}},
		{"🦙", []int{1, 29871, 243, 162, 169, 156}}, // byte fallback after a lone dummy prefix
	} {
		got := tok.Encode(tc.text, true)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
		if text := tok.Decode(tok.BOS, got[1:]); text != tc.text {
			t.Errorf("Decode(Encode(%q)) = %q", tc.text, text)
		}
	}
}

// TestFormatsTokenizeAlike checks that the GGUF vocab (U+2581 spaces, token
// types) and the llama2.c file (plain spaces, no types) encode and decode the
// same on random text, including codepoints outside the 512-piece vocab.
func TestFormatsTokenizeAlike(t *testing.T) {
	bin, err := LoadLlama2c(testmodels.Path(t, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	tk := storiesVocab(t)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abcdefghijklmnopqrstuvwxyz ABC.,!?'\n\"éü中🦙")
	for range 300 {
		var sb strings.Builder
		for range rng.IntN(40) {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		text := sb.String()
		a, b := bin.Encode(text, true), tk.Encode(text, true)
		if !slices.Equal(a, b) {
			t.Fatalf("%q: llama2c %v, gguf %v", text, a, b)
		}
		if got := tk.Decode(tk.BOS, b[1:]); got != text {
			t.Fatalf("round trip %q -> %q", text, got)
		}
	}
}

func TestDetokenizerKeepsUTF8Whole(t *testing.T) {
	tk := storiesVocab(t)
	text := "a 🦙 é 中!"
	ids := tk.Encode(text, true)
	d := NewDetokenizer(tk, ids[0])
	var sb strings.Builder
	for _, id := range ids[1:] {
		delta := d.Add(id)
		if !utf8.ValidString(delta) {
			t.Fatalf("delta %q splits a character", delta)
		}
		sb.WriteString(delta)
	}
	sb.WriteString(d.Flush())
	if sb.String() != text {
		t.Fatalf("streamed %q, want %q", sb.String(), text)
	}
}

// TestValidPrefix: what may go out now, with invalid bytes replaced; a
// trailing start of a character that could still complete is held.
func TestValidPrefix(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		n    int
	}{
		{"abc", "abc", 3}, {"a\xf0\x9f", "a", 1}, {"a\xf0\x9f\xa6", "a", 1}, {"a\xf0\x9f\xa6\x99", "a🦙", 5},
		{"\xc3", "", 0}, {"\xc3\xa9", "é", 2}, {"\xff", "\ufffd", 1}, {"a\x80", "a\ufffd", 2},
		{"\xe2\x82a", "\ufffd\ufffda", 3}, {"\xed\xa0\x80", "\ufffd\ufffd\ufffd", 3}, {"\xc0\xafx\xe2", "\ufffd\ufffdx", 3},
	} {
		got, n := validPrefix([]byte(tc.in))
		if got != tc.want || n != tc.n {
			t.Errorf("validPrefix(%q) = %q, %d; want %q, %d", tc.in, got, n, tc.want, tc.n)
		}
	}
}

// TestDetokenizerNeverEmitsInvalidUTF8: random byte-fallback tokens (what a
// model at temperature 2 samples) always give valid deltas; 4 of 100 streams
// used to send a frame whose text was not UTF-8.
func TestDetokenizerNeverEmitsInvalidUTF8(t *testing.T) {
	tk := storiesVocab(t)
	var bytePieces []int
	for id := range tk.VocabSize() {
		if tk.byteOf[id] >= 0 {
			bytePieces = append(bytePieces, id)
		}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 200 {
		d := NewDetokenizer(tk, tk.BOS)
		for range 40 {
			id := rng.IntN(tk.VocabSize())
			if rng.IntN(2) == 0 {
				id = bytePieces[rng.IntN(len(bytePieces))]
			}
			if delta := d.Add(id); !utf8.ValidString(delta) {
				t.Fatalf("delta %q is not UTF-8", delta)
			}
		}
		if tail := d.Flush(); !utf8.ValidString(tail) {
			t.Fatalf("flush %q is not UTF-8", tail)
		}
	}
}

// storiesVocab is the stories260K GGUF's vocabulary (U+2581 spaces, token types).
func storiesVocab(t testing.TB) *Tokenizer {
	t.Helper()
	b, err := os.ReadFile(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
