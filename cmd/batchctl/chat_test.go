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

// TestChatStored: chat --store prints the stored response's id; --continue
// with it runs the next turn on the stored conversation (its prompt holds
// the first turn, so it is longer than the turn alone); a wrong id fails.
func TestChatStored(t *testing.T) {
	sock, _ := serveSynth(t, "--chat-template", "chatml")
	args := []string{"--socket", sock, "--max-tokens", "4", "--temperature", "0"}
	_, errs, code := ctlRun(append([]string{"chat", "--store", "--message", "Hello there"}, args...)...)
	id := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(errs), "(response "), ")")
	if code != 0 || !strings.HasPrefix(id, "resp_") {
		t.Fatalf("--store: exit %d, stderr %q", code, errs)
	}
	c, err := client.Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	turn := []client.Message{{Role: "user", Content: "And?"}}
	alone, err := c.Generate(context.Background(), client.Request{Messages: turn, MaxTokens: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cont, err := c.Generate(context.Background(), client.Request{Messages: turn, MaxTokens: 1, PreviousResponseID: id}, nil)
	if err != nil || cont.Usage.PromptTokens <= alone.Usage.PromptTokens {
		t.Errorf("continuing %s: %d prompt tokens, alone %d (%v)", id, cont.Usage.PromptTokens, alone.Usage.PromptTokens, err)
	}
	out, errs, code := ctlRun(append([]string{"chat", "--continue", id, "--message", "And?"}, args...)...)
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(errs, "(response resp_") {
		t.Errorf("--continue: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := ctlRun(append([]string{"chat", "--continue", "resp_nope", "--message", "x"}, args...)...); code == 0 || !strings.Contains(errs, "not found") {
		t.Errorf("--continue resp_nope: exit %d, %q", code, errs)
	}
}
