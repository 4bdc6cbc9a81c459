package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	client "github.com/batchd/batchd/clients/go"
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
	sock, _ := serveSynth(t, "--chat-template", "chatml")
	out, errs, code := ctlRun("chat", "--socket", sock, "--system", "Be brief.", "--message", "Hello", "--max-tokens", "4", "--temperature", "0")
	if code != 0 || strings.Count(out, "\n") != 1 || errs != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := ctlRun("chat", "extra", "--socket", sock); code != 2 || !strings.Contains(errs, "no arguments") {
		t.Errorf("positional argument: exit %d, %q", code, errs)
	}
}
