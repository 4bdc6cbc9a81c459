package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchd/batchd/testing/synth"
)

// TestTuneAgainstDaemon: batchctl tune runs a small matrix on a running
// daemon through its config file, prints the knee and writes its outputs,
// and leaves the config file as it found it.
func TestTuneAgainstDaemon(t *testing.T) {
	dir := t.TempDir()
	sock, cfg := filepath.Join(dir, "b.sock"), filepath.Join(dir, "batchd.toml")
	conf := "[engine]\nmax_num_seqs = 4\nadaptive = false\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ctl := serveForCtl(t, sock, "--model", synth.TinyFile(t, 256), "--socket", sock, "--config", cfg, "--log-level", "error")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out, code := ctl("health"); code == 0 && strings.Contains(out, "ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon never became healthy")
		}
	}
	out, code := ctl("tune", "--config", cfg, "--sizes", "1,2,4", "--windows", "0,10ms", "--concurrency", "3", "--requests", "6",
		"--rounds", "1", "--max-tokens", "4", "--out", filepath.Join(dir, "out"))
	if code != 0 || !strings.Contains(out, "knee of throughput") || strings.Count(out, "round 1: ") != 6 {
		t.Fatalf("tune: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(cfg); string(b) != conf {
		t.Errorf("the config file after tune:\n%s", b)
	}
	for _, f := range []string{"tune.toml", "throughput.svg", "heatmap.svg"} {
		if _, err := os.Stat(filepath.Join(dir, "out", f)); err != nil {
			t.Error(err)
		}
	}
}
