package model

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/batchd/batchd/testing/testmodels"
)

func TestLlama2Tokenizer(t *testing.T) {
	tok, err := LoadLlama2cTokenizer(testmodels.Path(t, "tokenizer32k.bin"), 32000)
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
	bin, err := LoadLlama2cTokenizer(testmodels.Path(t, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	m := loadStories(t, "gguf")
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abcdefghijklmnopqrstuvwxyz ABC.,!?'\n\"éü中🦙")
	for range 300 {
		var sb strings.Builder
		for range rng.IntN(40) {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		text := sb.String()
		a, b := bin.Encode(text, true), m.Tokenizer.Encode(text, true)
		if !slices.Equal(a, b) {
			t.Fatalf("%q: llama2c %v, gguf %v", text, a, b)
		}
		if got := m.Tokenizer.Decode(m.Tokenizer.BOS, b[1:]); got != text {
			t.Fatalf("round trip %q -> %q", text, got)
		}
	}
}

func TestDetokenizerKeepsUTF8Whole(t *testing.T) {
	m := loadStories(t, "gguf")
	text := "a 🦙 é 中!"
	ids := m.Tokenizer.Encode(text, true)
	d := NewDetokenizer(m.Tokenizer, ids[0])
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

func TestCompletePrefix(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"abc", 3}, {"a\xf0\x9f", 1}, {"a\xf0\x9f\xa6", 1}, {"a\xf0\x9f\xa6\x99", 5},
		{"\xc3", 0}, {"\xc3\xa9", 2}, {"\xff", 1}, {"a\x80", 2},
	} {
		if got := completePrefix([]byte(tc.in)); got != tc.want {
			t.Errorf("completePrefix(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
