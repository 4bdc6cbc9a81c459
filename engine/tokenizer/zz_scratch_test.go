package tokenizer

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func llamaTok(t *testing.T, vocab, text string) []int {
	f := "/tmp/scratch/txt"
	os.WriteFile(f, []byte(text), 0o644)
	out, err := exec.Command("/work/shared/tools/llama.cpp/bin/llama-tokenize", "-m", vocab, "-f", f, "--ids", "--no-bos", "--no-escape", "--log-disable", "--no-parse-special").Output()
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(out))
	s = s[strings.LastIndex(s, "\n")+1:]
	var ids []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '[' || r == ']' || r == ',' || r == ' ' }) {
		var n int
		fmt.Sscan(f, &n)
		ids = append(ids, n)
	}
	return ids
}

func TestZZScratch(t *testing.T) {
	vocab := os.Getenv("ZZVOCAB")
	tok := loadVocab(t, vocab)
	rng := rand.New(rand.NewSource(1))
	alpha := []string{"\n", "\t", "\u00a0", "\u3000", " ", "\r", "a", "word", "7", "!", "\u0085", "\u2009", "é"}
	bad := 0
	for i := 0; i < 150 && bad < 8; i++ {
		var sb strings.Builder
		n := 2 + rng.Intn(6)
		for j := 0; j < n; j++ {
			sb.WriteString(alpha[rng.Intn(len(alpha))])
		}
		text := sb.String()
		want := llamaTok(t, vocab, text)
		got, _ := tok.Tokenize(context.Background(), text, Options{})
		if !slices.Equal(got, want) {
			bad++
			t.Errorf("%q: got %v want %v", text, got, want)
		}
	}
}
