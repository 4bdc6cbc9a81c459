package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestHybridModelServes: a Gated DeltaNet hybrid (models/arch2's qwen35)
// behind the daemon with n-gram speculation configured (the engine turns
// it off for recurrent layers): greedy chats give the same text alone and
// six at once (each sequence's state is its own), a repeated prompt
// resumes from the state kept at its cached prefix and writes the same,
// and a named tool call follows its schema.
func TestHybridModelServes(t *testing.T) {
	dir := testmodels.Dir(t)
	file := filepath.Join(dir, "arch2", "tiny-qwen35.gguf")
	td := startDaemonFlags(t, "[engine]\nspeculative = \"ngram\"\n", ServeFlags{Model: file, HTTPSocket: "http"})
	c := td.openai(t)
	ctx := context.Background()
	ask := func(i int) (string, int64) {
		resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-qwen35",
			Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Tell me about the number %d.", i))},
			MaxTokens: openai.Int(20), Temperature: openai.Float(0)})
		if err != nil {
			t.Error(err)
			return "", 0
		}
		return resp.Choices[0].Message.Content, resp.Usage.PromptTokensDetails.CachedTokens
	}
	alone := make([]string, 6)
	for i := range alone {
		alone[i], _ = ask(i)
	}
	together := make([]string, 6)
	var wg sync.WaitGroup
	for i := range together {
		wg.Go(func() { together[i], _ = ask(i) })
	}
	wg.Wait()
	for i := range alone {
		if alone[i] != together[i] {
			t.Errorf("prompt %d: alone %q, batched %q", i, alone[i], together[i])
		}
	}
	if text, cached := ask(0); cached == 0 || text != alone[0] {
		t.Errorf("a repeated prompt: %d cached tokens, text %q (first %q)", cached, text, alone[0])
	}
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-qwen35",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Book a table.")}, Tools: sdkTools(),
		MaxTokens: openai.Int(300), Temperature: openai.Float(0), ParallelToolCalls: openai.Bool(false),
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "book"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "book" {
		t.Fatalf("named tool: %s %+v", ch.FinishReason, ch.Message.ToolCalls)
	}
	if err := jsonvalid.Validate([]byte(schemaOf("book")), []byte(ch.Message.ToolCalls[0].Function.Arguments)); err != nil {
		t.Errorf("book(%s): %v", ch.Message.ToolCalls[0].Function.Arguments, err)
	}
}
