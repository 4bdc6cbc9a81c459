package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/daemon"
	"github.com/batchd/batchd/testing/synth"
)

func TestChatLoop(t *testing.T) {
	var turns []string
	clears := 0
	in := strings.NewReader("\n/clear\n  hello  \nsecond\n/bye\nafter\n")
	var out, errs bytes.Buffer
	err := chatLoop(context.Background(), in, &out, &errs, func(s string) error { turns = append(turns, s); return nil },
		func() { clears++ })
	if err != nil || strings.Join(turns, "|") != "hello|second" || clears != 1 {
		t.Fatalf("err %v, turns %q, clears %d", err, turns, clears)
	}
	// A template refusing a turn is reported and the chat goes on.
	turns = nil
	err = chatLoop(context.Background(), strings.NewReader("a\nb\n"), &out, &errs, func(s string) error {
		turns = append(turns, s)
		if s == "a" {
			return client.ErrInvalidArgument
		}
		return nil
	}, func() {})
	if err != nil || len(turns) != 2 {
		t.Fatalf("err %v, turns %q", err, turns)
	}
}

// TestChatOneTurn: batchctl chat --message against a daemon serving a
// model with a built-in template prints the reply and exits 0.
func TestChatOneTurn(t *testing.T) {
	model := synth.TinyFile(t, 4096)
	sock := filepath.Join(t.TempDir(), "b.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, []string{"serve", "--model", model, "--socket", sock, "--chat-template", "chatml", "--log-level", "error"})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := client.Dial(context.Background(), sock); err == nil {
			h, err := c.Health(context.Background())
			c.Close()
			if err == nil && h.State == "ready" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon never became ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, errs, code := ctlRun("chat", "--socket", sock, "--system", "Be brief.", "--message", "Hello", "--max-tokens", "4", "--temperature", "0")
	if code != 0 || strings.Count(out, "\n") != 1 || errs != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := ctlRun("chat", "extra", "--socket", sock); code != 2 || !strings.Contains(errs, "no arguments") {
		t.Errorf("positional argument: exit %d, %q", code, errs)
	}
}
