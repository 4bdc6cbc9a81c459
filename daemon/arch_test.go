package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestServeQwenChatPrompt: a Qwen model served over the socket reads the
// special tokens written in a chat prompt as those tokens (llama.cpp's
// prompt tokens and greedy output), keeps them as text when the request
// says parse_special false, and rejects a prompt that tokenizes to nothing
// (Qwen adds no BOS) with a typed error.
func TestServeQwenChatPrompt(t *testing.T) {
	g := testmodels.ArchGoldens(t, "qwen2")[2]
	td := startDaemonWith(t, "", filepath.Join(testmodels.Dir(t), "arch", "tiny-qwen2.gguf"), "")
	c := td.dial(t)
	n := len(g.OutputTokens)
	res, err := c.Generate(context.Background(), client.Request{Prompt: g.Prompt, MaxTokens: n}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.PromptTokens, g.PromptTokens) || !slices.Equal(res.Tokens, g.OutputTokens) || res.Text != g.Text {
		t.Fatalf("prompt %v\n want %v\noutput %v %q\n  want %v %q", res.PromptTokens, g.PromptTokens, res.Tokens, res.Text, g.OutputTokens, g.Text)
	}
	lit, err := c.Generate(context.Background(), client.Request{Prompt: g.Prompt, MaxTokens: 1, LiteralSpecial: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(lit.PromptTokens, g.PromptTokens[0]) || len(lit.PromptTokens) <= len(g.PromptTokens) {
		t.Fatalf("literal special: prompt tokens %v", lit.PromptTokens)
	}
	_, err = c.Generate(context.Background(), client.Request{Prompt: "", MaxTokens: 1}, nil)
	if !errors.Is(err, wire.ErrInvalidArgument) {
		t.Fatalf("empty prompt: %v, want invalid_argument", err)
	}
}

// TestStopSequenceReported: a stop string from the middle of the greedy
// text ends it there, and the done frame (the Go client's Result) says
// which stop string did; a stop token or the length leaves it empty.
func TestStopSequenceReported(t *testing.T) {
	var g testmodels.ArchGolden
	for _, x := range testmodels.ArchGoldens(t, "llama3") {
		if x.Prompt != "" && g.Prompt == "" {
			g = x
		}
	}
	td := startDaemonFlags(t, "", ServeFlags{Model: filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf"), HTTPSocket: "http"})
	c := td.dial(t)
	ctx := context.Background()
	whole, err := c.Generate(ctx, client.Request{Prompt: g.Prompt, MaxTokens: 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := []rune(whole.Text)
	if len(r) < 8 || whole.StopSequence != "" {
		t.Fatalf("greedy text %q, stop %q", whole.Text, whole.StopSequence)
	}
	stop := string(r[4:6])
	cut, err := c.Generate(ctx, client.Request{Prompt: g.Prompt, MaxTokens: 16, Stop: []string{"never-written", stop}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cut.FinishReason != "stop" || cut.StopSequence != stop || cut.Text+stop != whole.Text[:len(cut.Text)+len(stop)] {
		t.Errorf("stop %q: %s %q, text %q of %q", stop, cut.FinishReason, cut.StopSequence, cut.Text, whole.Text)
	}
	// The OpenAI API says it as vLLM does: the choice's stop_reason.
	oc := td.openai(t)
	p := openai.CompletionNewParams{Model: openai.CompletionNewParamsModel("tiny-llama3"), Prompt: openai.CompletionNewParamsPromptUnion{
		OfString: openai.String(g.Prompt)}, MaxTokens: openai.Int(16), Temperature: openai.Float(0),
		Stop: openai.CompletionNewParamsStopUnion{OfStringArray: []string{stop}}}
	resp, err := oc.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if sr := resp.Choices[0].JSON.ExtraFields["stop_reason"].Raw(); sr != strconv.Quote(stop) || resp.Choices[0].Text != cut.Text {
		t.Errorf("completions: stop_reason %s, text %q; want %q, %q", sr, resp.Choices[0].Text, stop, cut.Text)
	}
	s := oc.Completions.NewStreaming(ctx, p)
	streamed := ""
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
			streamed = ch.Choices[0].JSON.ExtraFields["stop_reason"].Raw()
		}
	}
	if s.Err() != nil || streamed != strconv.Quote(stop) {
		t.Errorf("streamed stop_reason %s (%v)", streamed, s.Err())
	}
}
