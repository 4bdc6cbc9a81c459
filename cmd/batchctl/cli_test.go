package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/daemon"
	"github.com/batchd/batchd/testing/synth"
)

func ctlRun(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestHelpExitsZeroAndPrintsOnce: --help printed "flag: help requested"
// and exited 2; cancel --help printed a strconv error.
func TestHelpExitsZeroAndPrintsOnce(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"generate", "--help"}, {"cancel", "--help"},
		{"stats", "-h"}, {"health", "--help"}, {"version", "--help"}, {"generate", "hi", "--help"}, {"chat", "--help"}} {
		out, errs, code := ctlRun(args...)
		if code != 0 || strings.Count(out, "usage:") != 1 || errs != "" || strings.Contains(out, "help requested") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	for _, args := range [][]string{{}, {"nope"}, {"generate"}, {"cancel", "x"}, {"stats", "--bogus"}, {"generate", "a", "b"}} {
		if _, errs, code := ctlRun(args...); code != 2 || strings.Count(errs, "usage:") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

// TestConnectionErrorsSayWhatToDo: a missing socket points at the daemon
// and --socket / BATCHD_SOCKET; a permission error at the batchd group.
func TestConnectionErrorsSayWhatToDo(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.sock")
	for _, args := range [][]string{{"--socket", missing, "health"}, {"health", "--socket", missing}} {
		_, errs, code := ctlRun(args...)
		if code != 1 || !strings.Contains(errs, "is batchd running") || !strings.Contains(errs, "BATCHD_SOCKET") ||
			!strings.HasPrefix(errs, "batchctl: ") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
	err := explain(&os.PathError{Op: "dial", Path: "/run/batchd/batchd.sock", Err: syscall.EACCES}, "/run/batchd/batchd.sock")
	if !strings.Contains(err.Error(), "batchd group") {
		t.Errorf("EACCES: %v", err)
	}
	out, _, code := ctlRun("version", "--socket", missing)
	if code != 0 || !strings.HasPrefix(out, "batchctl ") || !strings.Contains(out, "not reachable") {
		t.Errorf("version: %d %q", code, out)
	}
}

// TestStatsForPeople: grouped figures with units, and the requests in
// flight with their ids so that a user can cancel one; generate --verbose
// shows the id; an error comes without a blank line or a stutter.
// serveSynth runs batchd serve on a tiny random model (with extra flags)
// until the test ends, and returns its socket and a connected client.
func serveSynth(t *testing.T, extra ...string) (string, *client.Client) {
	t.Helper()
	model := synth.TinyFile(t, 4096)
	sock := filepath.Join(t.TempDir(), "b.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Serve(ctx, append([]string{"--model", model, "--socket", sock, "--log-level", "error"}, extra...), os.Stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := client.Dial(context.Background(), sock); err == nil {
			if h, err := c.Health(context.Background()); err == nil && h.State == "ready" {
				t.Cleanup(func() { c.Close() })
				return sock, c
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon never became ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStatsForPeople(t *testing.T) {
	sock, c := serveSynth(t)
	// A long request to list (its id comes from OnAccepted). The tiny model
	// is fast and may sample EOS early, so try a few prompts.
	var out, errs string
	var code int
	listed := false
	for attempt := 0; attempt < 8 && !listed; attempt++ {
		ids := make(chan uint64, 1)
		genDone := make(chan error, 1)
		go func() {
			_, err := c.Generate(context.Background(), client.Request{Prompt: fmt.Sprint("x", attempt), MaxTokens: 4000,
				OnAccepted: func(id uint64) { ids <- id }}, nil)
			genDone <- err
		}()
		id := <-ids
		out, errs, code = ctlRun("stats", "--socket", sock)
		for _, want := range []string{"Requests", "Throughput", "KV cache", "Batching", "tok/s"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("stats: exit %d, missing %q:\n%s%s", code, want, out, errs)
			}
		}
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^\s+%d\s+\S+\s+standard\s+(running|waiting)`, id))
		if listed = strings.Contains(out, "Requests in flight") && row.MatchString(out); listed {
			_, cerrs, ccode := ctlRun("cancel", fmt.Sprint(id), "--socket", sock)
			if ccode != 0 && !strings.Contains(cerrs, "not_found") { // it may have ended meanwhile
				t.Fatalf("cancel: %d %s", ccode, cerrs)
			}
		}
		<-genDone
	}
	if !listed {
		t.Fatalf("no request was ever listed in flight:\n%s", out)
	}
	if out, _, code := ctlRun("stats", "--json", "--socket", sock); code != 0 || !strings.Contains(out, `"kv_blocks_total"`) ||
		!strings.Contains(out, `"health"`) || !strings.Contains(out, `"fill_rate"`) {
		t.Fatalf("stats --json: %d %s", code, out)
	}
	if !strings.Contains(out, "Dashboard") || !strings.Contains(out, "Health") {
		t.Fatalf("stats lacks the dashboard:\n%s", out)
	}
	out, errs, code = ctlRun("top", "--count", "2", "--interval", "100ms", "--socket", sock)
	if code != 0 || strings.Count(out, "\x1b[H\x1b[2J") != 2 || !strings.Contains(out, "health") || !strings.Contains(out, "fill") {
		t.Fatalf("top: exit %d %q %q", code, out, errs)
	}
	out, errs, code = ctlRun("generate", "hi", "--max-tokens", "3", "--verbose", "--socket", sock)
	if code != 0 || !regexp.MustCompile(`^request \d+ \(batchctl cancel \d+\)\n`).MatchString(errs) {
		t.Fatalf("generate --verbose: %d %q %q", code, out, errs)
	}
	out, errs, code = ctlRun("generate", "hi", "--channel", "warp", "--socket", sock)
	if code != 1 || out != "" || !strings.HasPrefix(errs, "batchctl: invalid_argument: channel") {
		t.Fatalf("bad channel: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, errs, code = ctlRun("generate", "hi", "--temperature", "-1", "--socket", sock)
	if code != 1 || out != "" || strings.Contains(errs, "invalid argument:") || !strings.Contains(errs, "temperature") {
		t.Fatalf("bad temperature: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
