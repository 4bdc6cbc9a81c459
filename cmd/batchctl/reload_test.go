package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchd/batchd/testing/synth"
)

// TestReloadAppliesAHeldWidening: a config edit that widens access (here
// the per-user cap) is held by the file watcher and shown by batchctl
// stats; batchctl reload (this test runs as root, an admin) applies it.
func TestReloadAppliesAHeldWidening(t *testing.T) {
	dir := t.TempDir()
	sock, cfg := filepath.Join(dir, "b.sock"), filepath.Join(dir, "batchd.toml")
	if err := os.WriteFile(cfg, []byte("[server]\nmax_requests_per_user = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctl := serveForCtl(t, sock, "--model", synth.TinyFile(t, 256), "--config", cfg, "--socket", sock, "--log-level", "error")
	stats := func() (held []string, cap int) {
		out, code := ctl("stats", "--json")
		var s struct {
			ReloadHeld []string `json:"reload_held"`
			Config     struct {
				MaxRequestsPerUser int `json:"max_requests_per_user"`
			} `json:"config"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
			return nil, -1
		}
		return s.ReloadHeld, s.Config.MaxRequestsPerUser
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	wait("the daemon", func() bool { _, c := stats(); return c == 4 })
	if err := os.WriteFile(cfg, []byte("[server]\nmax_requests_per_user = 64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait("the widening to be held", func() bool { h, _ := stats(); return len(h) > 0 })
	if out, _ := ctl("stats"); !strings.Contains(out, "batchctl reload applies it") {
		t.Errorf("batchctl stats does not show the held change:\n%s", out)
	}
	if out, code := ctl("reload"); code != 0 || !strings.Contains(out, "config reloaded") {
		t.Fatalf("batchctl reload: %d %s", code, out)
	}
	if held, c := stats(); len(held) != 0 || c != 64 {
		t.Fatalf("after batchctl reload: held %q, cap %d", held, c)
	}
	if err := os.WriteFile(cfg, []byte("[server]\nmax_requests_per_user = -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := ctl("reload"); code == 0 || !strings.Contains(out, "max_requests_per_user") {
		t.Fatalf("batchctl reload of an invalid file: %d %s", code, out)
	}
}
