package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// TestTokenizeCommand: `batchd tokenize` on a vocabulary-only file prints
// llama-tokenize's lines, --ids its list, --json ids and pieces; it reads
// --file; --no-bos and --parse-special change the ids as they say.
func TestTokenizeCommand(t *testing.T) {
	vocab := filepath.Join(testmodels.Dir(t), "vocab", "ggml-vocab-llama-bpe.gguf")
	tokenize := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := run(context.Background(), append([]string{"tokenize", "--model", vocab}, args...), &runEnv{stdout: &out, stderr: &errb}); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		return out.String()
	}
	if got := tokenize("Hello world"); got != "128000 -> '<|begin_of_text|>'\n  9906 -> 'Hello'\n  1917 -> ' world'\n" {
		t.Errorf("lines: %q", got)
	}
	if got := tokenize("--ids", "--no-bos", "Hello world"); got != "[9906, 1917]\n" {
		t.Errorf("--ids: %q", got)
	}
	var js struct {
		IDs    []int    `json:"ids"`
		Pieces []string `json:"pieces"`
	}
	f := filepath.Join(t.TempDir(), "text")
	if err := os.WriteFile(f, []byte("<|eot_id|>é"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(tokenize("--json", "--no-bos", "--parse-special", "--file", f)), &js); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(js.IDs, []int{128009, 978}) || !slices.Equal(js.Pieces, []string{"<|eot_id|>", "é"}) {
		t.Errorf("json: %+v", js)
	}
	if got := tokenize("--ids", "--no-bos", "<|eot_id|>"); strings.Contains(got, "128009") {
		t.Errorf("without --parse-special the special token's text was parsed: %s", got)
	}
	for _, args := range [][]string{{"tokenize", "--model", vocab}, {"tokenize", "a"}, {"tokenize", "--model", vocab, "--file", f, "b"}} {
		if err := run(context.Background(), args, &runEnv{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
