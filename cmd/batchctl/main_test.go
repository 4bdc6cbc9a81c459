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
	"time"

	"github.com/batchd/batchd/daemon"
	"github.com/batchd/batchd/testing/testmodels"
)

// serveForCtl runs the daemon with args until the test ends (a failed exit
// fails the test) and returns a batchctl that talks to sock.
func serveForCtl(t *testing.T, sock string, args ...string) func(args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- daemon.Serve(ctx, args, os.Stderr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--socket", sock}, args...), &out, &errb)
		return out.String() + errb.String(), code
	}
}

func TestBatchctlAgainstDaemon(t *testing.T) {
	// Resolve the model here: a Skip inside the goroutine below would end
	// only that goroutine and leave the test blocked on done.
	modelPath := testmodels.Path(t, "stories260K.gguf")
	sock := filepath.Join(t.TempDir(), "b.sock")
	ctl := serveForCtl(t, sock, "--model", modelPath, "--socket", sock, "--log-level", "error")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if out, code := ctl("health"); code == 0 && strings.Contains(out, "state    ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon never became healthy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	g := testmodels.Goldens(t)[0]
	out, code := ctl("generate", g.Prompt, "--max-tokens", "20", "--json")
	var res struct {
		PromptTokens []int  `json:"prompt_tokens"`
		OutputTokens []int  `json:"output_tokens"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("generate --json: %d %s", code, out)
	}
	if !slices.Equal(res.PromptTokens, g.PromptTokens) || !slices.Equal(res.OutputTokens, g.OutputTokens[:20]) ||
		res.FinishReason != "length" {
		t.Fatalf("generate --json: %+v", res)
	}
	if out, code := ctl("generate", g.Prompt, "--max-tokens", "20"); code != 0 || strings.TrimSpace(out) != res.Text {
		t.Fatalf("streamed generate: %d %q, want %q", code, out, res.Text)
	}
	if out, code := ctl("stats", "--json"); code != 0 || !strings.Contains(out, `"kv_blocks_total"`) {
		t.Fatalf("stats: %d %s", code, out)
	}
	if out, code := ctl("stats"); code != 0 || !strings.Contains(out, "generated") {
		t.Fatalf("stats table: %d %s", code, out)
	}
	if out, code := ctl("cancel", "999"); code != 1 || !strings.Contains(out, "not_found") {
		t.Fatalf("cancel of an unknown id: %d %s", code, out)
	}
	if _, code := ctl("generate"); code != 2 {
		t.Fatalf("generate without a prompt exited %d", code)
	}
	if _, code := ctl("--socket", filepath.Join(t.TempDir(), "none.sock"), "health"); code != 1 {
		t.Fatalf("health with no daemon exited %d", code)
	}
}
