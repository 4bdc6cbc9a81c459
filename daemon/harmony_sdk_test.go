package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
)

// startHarmony serves the tiny gpt-oss model with OpenAI's gpt-oss
// template (harmony).
func startHarmony(t *testing.T) *testDaemon {
	t.Helper()
	path := filepath.Join(testmodels.Dir(t), "arch2", "tiny-gpt-oss.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not found: the arch2 reference models (see ../shared/models/arch2)", path)
	}
	tmpl, err := filepath.Abs("../chat/testdata/harmony/openai-gpt-oss-120b.jinja")
	if err != nil {
		t.Fatal(err)
	}
	return startDaemonFlags(t, fmt.Sprintf("[model]\nchat_template = %q\n", tmpl), ServeFlags{Model: path, HTTPSocket: "http"})
}

// TestHarmonyOpenAISDK: a harmony model's calls and structured output with
// the official OpenAI Go SDK, as a Qwen model's: tool_choice required and
// named give a call (whole and streamed alike) whose arguments fit the
// tool, the call and its result render into the next turn, response_format
// gives JSON on the final channel, and reasoning_effort is a template
// variable (a bad one is a 400 naming it).
func TestHarmonyOpenAISDK(t *testing.T) {
	td := startHarmony(t)
	c := td.openai(t)
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 2 plus 3? Use the add tool.")}
	base := openai.ChatCompletionNewParams{Model: "tiny-gpt-oss", Messages: msgs, Tools: sdkTools(), MaxTokens: openai.Int(400),
		Temperature: openai.Float(0)}
	nextTurn(t, c, base, forcedCalls(t, c, base, true))

	// Structured output: the JSON is the final channel's content. A model
	// may reason first for as long as it likes (random weights: on and
	// on), so samples are drawn until some end: each that ends holds JSON
	// that fits, and nothing else.
	schema := `{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}, "ok": {"type": "boolean"}}, "required": ["n", "ok"]}`
	var sp map[string]any
	_ = json.Unmarshal([]byte(schema), &sp)
	ended := 0
	for seed := int64(1); seed <= 16 && ended < 4; seed++ {
		p := openai.ChatCompletionNewParams{Model: "tiny-gpt-oss", Messages: msgs, MaxTokens: openai.Int(160), Temperature: openai.Float(1),
			Seed: openai.Int(seed), ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: sp, Strict: openai.Bool(true)}}}}
		out, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ch := out.Choices[0]
		if ch.FinishReason == "length" {
			continue // still reasoning, or writing
		}
		ended++
		t.Logf("seed %d: reasoning %q, content %q", seed, reasoningOf(ch.Message), ch.Message.Content)
		if err := jsonvalid.Validate([]byte(schema), []byte(ch.Message.Content)); err != nil || ch.FinishReason != "stop" {
			t.Errorf("response_format, seed %d: %q (%s) reasoning %q: %v", seed, ch.Message.Content, ch.FinishReason, reasoningOf(ch.Message), err)
		}
	}
	if ended == 0 {
		t.Error("response_format: no sample ended")
	}

	// A bad reasoning_effort is refused by name (TestHarmonyOllamaThink
	// shows a good one reaching the template).
	plain := openai.ChatCompletionNewParams{Model: "tiny-gpt-oss", Messages: msgs, MaxTokens: openai.Int(1), Temperature: openai.Float(0)}
	for _, effort := range []string{"low", "high"} {
		if _, err := c.Chat.Completions.New(ctx, plain, option.WithJSONSet("reasoning_effort", effort)); err != nil {
			t.Errorf("reasoning_effort %s: %v", effort, err)
		}
	}
	_, err := c.Chat.Completions.New(ctx, plain, option.WithJSONSet("reasoning_effort", "extreme"))
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, "reasoning_effort") {
		t.Errorf("reasoning_effort extreme: %v, want a 400 naming it", err)
	}
}

// TestHarmonyOllamaThink: Ollama's think levels are gpt-oss's reasoning
// effort (think "high" prompts as OpenAI's reasoning_effort "high": the
// same greedy text; "low" prompts otherwise), a turn's thinking reaches
// the template as its analysis, and with think left out a harmony answer's
// channels are still read apart (no harmony markup in the content).
func TestHarmonyOllamaThink(t *testing.T) {
	td := startHarmony(t)
	c, oc := td.ollama(t), td.openai(t)
	ctx := context.Background()
	no := false
	text := func(think any, msgs []api.Message) (string, int) {
		t.Helper()
		req := &api.ChatRequest{Model: "tiny-gpt-oss", Messages: msgs, Stream: &no, Options: map[string]any{"temperature": 0, "num_predict": 12}}
		if think != nil {
			req.Think = &api.ThinkValue{Value: think}
		}
		var resp api.ChatResponse
		if err := c.Chat(ctx, req, func(r api.ChatResponse) error { resp = r; return nil }); err != nil {
			t.Fatalf("think %v: %v", think, err)
		}
		for _, marker := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|end|>"} {
			if strings.Contains(resp.Message.Content, marker) {
				t.Errorf("think %v: content %q holds harmony markup", think, resp.Message.Content)
			}
		}
		return resp.Message.Thinking + "\x00" + resp.Message.Content, resp.PromptEvalCount
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: "tiny-gpt-oss"})
	if err != nil {
		t.Fatal(err)
	}
	if caps := fmt.Sprint(show.Capabilities); !strings.Contains(caps, "thinking") || !strings.Contains(caps, "tools") {
		t.Errorf("capabilities %s: want thinking and tools", caps)
	}
	msgs := []api.Message{{Role: "user", Content: "Count to three."}}
	high, _ := text("high", msgs)
	low, _ := text("low", msgs)
	text(nil, msgs)
	o, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-gpt-oss", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Count to three.")}, MaxTokens: openai.Int(12), Temperature: openai.Float(0)}, option.WithJSONSet("reasoning_effort", "high"))
	if err != nil {
		t.Fatal(err)
	}
	if want := reasoningOf(o.Choices[0].Message) + "\x00" + o.Choices[0].Message.Content; high != want {
		t.Errorf("think high %q, reasoning_effort high %q", high, want)
	}
	if high == low {
		t.Errorf("think high and low wrote the same %q: the level did not reach the template", high)
	}
	// A call's thinking is rendered as its analysis; a past answer's is
	// dropped, as the template says.
	args := api.NewToolCallFunctionArguments()
	args.Set("a", 1)
	args.Set("b", 2)
	call := api.Message{Role: "assistant", Thinking: "Use add.", ToolCalls: []api.ToolCall{{Function: api.ToolCallFunction{Name: "add", Arguments: args}}}}
	for _, c := range []struct {
		turn     []api.Message
		rendered bool
	}{
		{append(msgs[:1:1], call, api.Message{Role: "tool", Content: "3", ToolName: "add"}), true},
		{append(msgs[:1:1], api.Message{Role: "assistant", Content: "1 2 3", Thinking: "Easy."}, api.Message{Role: "user", Content: "Again."}), false},
	} {
		_, with := text(true, c.turn)
		c.turn[1].Thinking = ""
		_, without := text(true, c.turn)
		if (with > without) != c.rendered {
			t.Errorf("%+v: %d prompt tokens with its thinking, %d without", c.turn[1], with, without)
		}
	}
}
