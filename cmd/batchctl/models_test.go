package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchd/batchd/testing/synth"
)

// TestModelsCommands: batchctl models lists the default model and a
// models_dir file, load loads it (ps shows it), generate --model runs on
// it, unload unloads it, and an unknown name fails.
func TestModelsCommands(t *testing.T) {
	dir, mdir := t.TempDir(), t.TempDir()
	if err := os.Symlink(synth.TinyFile(t, 256), filepath.Join(mdir, "other.gguf")); err != nil {
		t.Fatal(err)
	}
	sock, cfg := filepath.Join(dir, "b.sock"), filepath.Join(dir, "batchd.toml")
	if err := os.WriteFile(cfg, []byte("models_dir = \""+mdir+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctl := serveForCtl(t, sock, "--model", synth.TinyFile(t, 256), "--config", cfg, "--socket", sock, "--log-level", "error")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out, code := ctl("health"); code == 0 && strings.Contains(out, "ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon never became healthy")
		}
	}
	out, code := ctl("models")
	if code != 0 || !strings.Contains(out, "other") || !strings.Contains(out, "(default)") || !strings.Contains(out, "available") {
		t.Fatalf("models: %d\n%s", code, out)
	}
	if out, code := ctl("load", "other", "--keep-alive", "-1"); code != 0 || !strings.Contains(out, "other loaded") {
		t.Fatalf("load: %d %s", code, out)
	}
	if out, _ := ctl("ps"); !strings.Contains(out, "other") || !strings.Contains(out, "forever") {
		t.Errorf("ps after load:\n%s", out)
	}
	if out, code := ctl("generate", "hello", "--model", "other", "--max-tokens", "3", "--json"); code != 0 || !strings.Contains(out, `"output_tokens"`) {
		t.Errorf("generate --model other: %d %s", code, out)
	}
	if out, code := ctl("unload", "other"); code != 0 {
		t.Fatalf("unload: %d %s", code, out)
	}
	if out, _ := ctl("ps"); strings.Contains(out, "other") {
		t.Errorf("ps after unload:\n%s", out)
	}
	if out, code := ctl("load", "nope"); code == 0 || !strings.Contains(out, "nope") {
		t.Errorf("load nope: %d %s", code, out)
	}
}

// TestRerankCommand: batchctl rerank prints every document best first
// (score, index, text), --top-n the best, --json the results; it wants a
// query and a document.
func TestRerankCommand(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "b.sock")
	ctl := serveForCtl(t, sock, "--model", synth.TinyReranker(t, 256), "--socket", sock, "--log-level", "error")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out, code := ctl("health"); code == 0 && strings.Contains(out, "ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon never became healthy")
		}
	}
	docs := []string{"a cat sat", "dogs bark", "the cat sat on the mat"}
	out, code := ctl(append([]string{"rerank", "where did the cat sit"}, docs...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("rerank: %d\n%s", code, out)
	}
	prev, seen := 2.0, map[int]bool{}
	for _, l := range lines {
		var score float64
		var idx int
		if n, err := fmt.Sscanf(l, "%f\t%d\t", &score, &idx); n != 2 || err != nil || idx < 0 || idx > 2 || !strings.HasSuffix(l, "\t"+docs[idx]) {
			t.Fatalf("line %q: %v", l, err)
		}
		if score > prev || seen[idx] {
			t.Errorf("line %q: not best first, or a document twice", l)
		}
		prev, seen[idx] = score, true
	}
	out, code = ctl(append([]string{"rerank", "--json", "--top-n", "1", "where did the cat sit"}, docs...)...)
	var res []struct {
		Index int     `json:"index"`
		Score float64 `json:"score"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res) != 1 || !strings.Contains(lines[0], fmt.Sprintf("\t%d\t", res[0].Index)) {
		t.Errorf("rerank --json --top-n 1: %d %s (%v)", code, out, err)
	}
	if _, code := ctl("rerank", "just a query"); code != 2 {
		t.Errorf("rerank without a document: exit %d, want 2", code)
	}
}

// TestEmbedCommand: batchctl embed prints one unit vector per text.
func TestEmbedCommand(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "b.sock")
	ctl := serveForCtl(t, sock, "--model", synth.TinyFile(t, 256), "--socket", sock, "--log-level", "error")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out, code := ctl("health"); code == 0 && strings.Contains(out, "ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon never became healthy")
		}
	}
	out, code := ctl("embed", "hello there", "another text", "--dimensions", "8")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("embed: %d\n%s", code, out)
	}
	for _, l := range lines {
		var v []float64
		if err := json.Unmarshal([]byte(l), &v); err != nil || len(v) != 8 {
			t.Fatalf("line %q: %v", l, err)
		}
		var ss float64
		for _, x := range v {
			ss += x * x
		}
		if math.Abs(ss-1) > 1e-5 {
			t.Errorf("norm² %g, want 1", ss)
		}
	}
	if _, code := ctl("embed"); code != 2 {
		t.Errorf("embed without text: exit %d, want 2", code)
	}
	// warm: a JSONL file of prompts; the second time every full block is cached.
	file := filepath.Join(dir, "warm.jsonl")
	text := `{"prompt": "` + strings.Repeat("warm this prompt before the peak ", 6) + `"}` + "\n\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := ctl("warm", file); code != 0 || !strings.Contains(out, "warmed 1 prompts") || !strings.Contains(out, " 0 of them") {
		t.Errorf("warm: %d %s", code, out)
	}
	if out, code := ctl("warm", file); code != 0 || strings.Contains(out, " 0 of them") {
		t.Errorf("warm again: %d %s (want cached tokens)", code, out)
	}
	if err := os.WriteFile(file, []byte("{\"neither\": 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := ctl("warm", file); code != 2 {
		t.Errorf("warm with a bad line: %d %s, want exit 2", code, out)
	}
}
