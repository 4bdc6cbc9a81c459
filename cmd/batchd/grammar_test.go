package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGrammarCommand: batchd grammar prints the GBNF a schema becomes, in
// llama.cpp v0.5.0's form.
func TestGrammarCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	if err := os.WriteFile(path, []byte(`{"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := run(ctx, []string{"grammar", "--schema", path}, &runEnv{stdout: &out, stderr: &errb}); err != nil {
		t.Fatal(err, errb.String())
	}
	if !strings.Contains(out.String(), `root ::= "[" space integer ("," space integer){1,3} space "]"`) {
		t.Errorf("batchd grammar printed:\n%s", out.String())
	}
}
