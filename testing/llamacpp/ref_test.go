package llamacpp

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// TestReference: the reference installs, loads a model, tokenizes,
// generates greedily with log-probabilities and converts a schema.
func TestReference(t *testing.T) {
	r := New(t, Options{})
	if !strings.Contains(r.System, "AVX2 = 1") {
		t.Logf("system: %s", r.System)
	}
	path := filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")
	if n, err := r.LoadModel(path, false); err != nil || n != 128256 {
		t.Fatalf("load: %d %v", n, err)
	}
	if err := r.Context(ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	ids, err := r.Tokenize("Once upon a time", true, true)
	if err != nil || len(ids) != 5 || ids[0] != 128000 {
		t.Fatalf("tokenize: %v %v", ids, err)
	}
	toks, top, err := r.Greedy(0, ids, 4, 5, true)
	if err != nil || len(toks) != 4 || len(top) != 4 || len(top[0]) != 5 || int(top[0][0][0]) != toks[0] {
		t.Fatalf("greedy: %v %v %v", toks, top, err)
	}
	g, err := r.SchemaGBNF([]byte(`{"type": "integer"}`))
	if err != nil || !strings.Contains(g, "root ::=") {
		t.Fatalf("schema: %q %v", g, err)
	}
}

// TestReferenceCrashIsTyped: when the process dies under a call (ggml
// crashing, as v0.5.0's AMX matmul does on some shapes), the call returns
// ErrExited saying how it ended, the next call too, and Close reports the
// same exit rather than failing to wait twice.
func TestReferenceCrashIsTyped(t *testing.T) {
	r, err := Start(Installed(t), Options{})
	if err != nil {
		t.Skipf("llama.cpp %s: %v", Release, err)
	}
	if err := r.cmd.Process.Signal(syscall.SIGSEGV); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")
	for range 2 {
		_, err := r.LoadModel(path, false)
		if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "segmentation fault") {
			t.Fatalf("call after the process died: %v", err)
		}
	}
	if err := r.Close(); err == nil || !strings.Contains(err.Error(), "segmentation fault") {
		t.Fatalf("close: %v", err)
	}
}
