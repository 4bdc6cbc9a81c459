package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
)

func sdkTools() []openai.ChatCompletionToolUnionParam {
	var out []openai.ChatCompletionToolUnionParam
	for _, t := range acceptTools {
		var params shared.FunctionParameters
		if err := json.Unmarshal([]byte(t.schema), &params); err != nil {
			panic(err)
		}
		out = append(out, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: t.name,
			Description: openai.String("the " + t.name + " tool"), Parameters: params}))
	}
	return out
}

func schemaOf(name string) string {
	for _, t := range acceptTools {
		if t.name == name {
			return t.schema
		}
	}
	return ""
}

// streamChat streams params and returns the SDK's accumulated message
// and the reasoning_content deltas put together.
func streamChat(t *testing.T, c openai.Client, params openai.ChatCompletionNewParams, opts ...option.RequestOption) (openai.ChatCompletion, string) {
	t.Helper()
	s := c.Chat.Completions.NewStreaming(context.Background(), params, opts...)
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	for s.Next() {
		ch := s.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) > 0 {
			if f, ok := ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				var r string
				_ = json.Unmarshal([]byte(f.Raw()), &r)
				reasoning.WriteString(r)
			}
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return acc.ChatCompletion, reasoning.String()
}

// forcedCalls asks for calls under tool_choice required and a named
// function, whole and streamed: each answer is calls (one when one) whose
// arguments fit their tool, and streamed the same as whole, its reasoning
// too. It returns the required answer.
func forcedCalls(t *testing.T, c openai.Client, base openai.ChatCompletionNewParams, one bool) openai.ChatCompletion {
	t.Helper()
	choices := map[string]openai.ChatCompletionToolChoiceOptionUnionParam{
		"required": {OfAuto: openai.String("required")},
		"named":    {OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "book"}}},
	}
	var first openai.ChatCompletion
	for _, name := range []string{"required", "named"} {
		p := base
		p.ToolChoice = choices[name]
		resp, err := c.Chat.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ch := resp.Choices[0]
		if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) == 0 || one && len(ch.Message.ToolCalls) != 1 || ch.Message.Content != "" {
			t.Fatalf("%s: finish %s, calls %v, content %q", name, ch.FinishReason, ch.Message.ToolCalls, ch.Message.Content)
		}
		tc := ch.Message.ToolCalls[0]
		if name == "named" && tc.Function.Name != "book" || tc.ID == "" || tc.Type != "function" {
			t.Fatalf("%s: call %+v", name, tc)
		}
		if err := jsonvalid.Validate([]byte(schemaOf(tc.Function.Name)), []byte(tc.Function.Arguments)); err != nil {
			t.Errorf("%s: %s(%s): %v", name, tc.Function.Name, tc.Function.Arguments, err)
		}
		streamed, reasoning := streamChat(t, c, p)
		sc := streamed.Choices[0]
		if sc.FinishReason != "tool_calls" || len(sc.Message.ToolCalls) != len(ch.Message.ToolCalls) ||
			sc.Message.ToolCalls[0].Function.Name != tc.Function.Name || sc.Message.ToolCalls[0].Function.Arguments != tc.Function.Arguments ||
			sc.Message.ToolCalls[0].ID == "" || reasoning != reasoningOf(ch.Message) {
			t.Errorf("%s streamed: %s %+v reasoning %q, whole %+v %q", name, sc.FinishReason, sc.Message.ToolCalls, reasoning,
				ch.Message.ToolCalls, reasoningOf(ch.Message))
		}
		if name == "required" {
			first = *resp
		}
	}
	return first
}

// nextTurn sends the first call and its result back: the next prompt holds
// them.
func nextTurn(t *testing.T, c openai.Client, base openai.ChatCompletionNewParams, first openai.ChatCompletion) {
	t.Helper()
	call := first.Choices[0].Message.ToolCalls[0]
	turn2 := base
	turn2.Messages = append(append([]openai.ChatCompletionMessageParamUnion{}, base.Messages...), first.Choices[0].Message.ToParam(),
		openai.ToolMessage(`{"result": 5}`, call.ID))
	turn2.MaxTokens = openai.Int(16)
	resp, err := c.Chat.Completions.New(context.Background(), turn2)
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	if resp.Usage.PromptTokens <= first.Usage.PromptTokens+int64(len(call.Function.Arguments)/8) {
		t.Errorf("second turn prompt of %d tokens: the call and its result are not in it (first turn %d)",
			resp.Usage.PromptTokens, first.Usage.PromptTokens)
	}
}

// reasoningOf is a message's reasoning_content.
func reasoningOf(m openai.ChatCompletionMessage) string {
	f, ok := m.JSON.ExtraFields["reasoning_content"]
	if !ok {
		return ""
	}
	var r string
	_ = json.Unmarshal([]byte(f.Raw()), &r)
	return r
}

// TestToolCallsOpenAISDK drives tool calling with the official OpenAI Go
// SDK: required, a named function, auto and none, streamed (the SDK's
// accumulator puts the deltas together) and not, then a second turn with
// the call and its result; bad tool fields are 400s naming them.
func TestToolCallsOpenAISDK(t *testing.T) {
	td := startQwenChat(t, "")
	c := td.openai(t)
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 2 plus 3? Use the add tool.")}
	base := openai.ChatCompletionNewParams{Model: "tiny-qwen2", Messages: msgs, Tools: sdkTools(), MaxTokens: openai.Int(400),
		Temperature: openai.Float(0), ParallelToolCalls: openai.Bool(false)}
	first := forcedCalls(t, c, base, false)
	for _, name := range []string{"auto", "none"} {
		p := base
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(name)}
		p.MaxTokens = openai.Int(24)
		resp, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ch := resp.Choices[0]
		if name == "none" && len(ch.Message.ToolCalls) > 0 || ch.FinishReason == "tool_calls" && len(ch.Message.ToolCalls) == 0 {
			t.Errorf("%s: finish %s, calls %v", name, ch.FinishReason, ch.Message.ToolCalls)
		}
		streamed, _ := streamChat(t, c, p)
		if got := streamed.Choices[0].Message.Content; got != ch.Message.Content {
			t.Errorf("%s streamed %q, whole %q", name, got, ch.Message.Content)
		}
	}
	nextTurn(t, c, base, first)
	for _, bad := range []struct {
		param string
		opt   option.RequestOption
	}{
		{"tool_choice", option.WithJSONSet("tool_choice", map[string]any{"type": "function", "function": map[string]any{"name": "nope"}})},
		{"tool_choice", option.WithJSONSet("tool_choice", "sometimes")},
		{"tools", option.WithJSONSet("tools", []any{map[string]any{"type": "function", "function": map[string]any{"name": "a b"}}})},
		{"functions", option.WithJSONSet("functions", []any{map[string]any{"name": "f"}})},
		{"grammar", option.WithJSONSet("grammar", `root ::= "a"`)}, // a JSON response_format may join calls; a grammar not
	} {
		p := base
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
		_, err := c.Chat.Completions.New(ctx, p, bad.opt)
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, bad.param) {
			t.Errorf("%s: %v, want a 400 naming it", bad.param, err)
		}
	}
}

// TestReasoningOpenAISDK: on a template whose prompt opens a <think> block
// (DeepSeek R1's), the thought comes back as reasoning_content, streamed
// as delta.reasoning_content; reasoning_format none keeps it in content.
// chat_template_kwargs reach the template (Qwen 3's enable_thinking).
func TestReasoningOpenAISDK(t *testing.T) {
	dir := testmodels.Dir(t)
	cfg := fmt.Sprintf("[model]\nchat_template = %q\n", filepath.Join(dir, "chat", "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"))
	td := startDaemonFlags(t, cfg, ServeFlags{Model: filepath.Join(dir, "arch", "tiny-qwen2.gguf"), HTTPSocket: "http"})
	c := td.openai(t)
	p := openai.ChatCompletionNewParams{Model: "tiny-qwen2", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Why is the sky blue?")},
		MaxTokens: openai.Int(24), Temperature: openai.Float(1), Seed: openai.Int(7)} // greedy writes only newlines
	resp, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var reasoning string
	if f, ok := resp.Choices[0].Message.JSON.ExtraFields["reasoning_content"]; ok {
		_ = json.Unmarshal([]byte(f.Raw()), &reasoning)
	}
	if reasoning == "" || resp.Choices[0].Message.Content != "" {
		raw, _ := c.Chat.Completions.New(context.Background(), p, option.WithJSONSet("reasoning_format", "none"))
		t.Fatalf("reasoning %q, content %q: the open block is reasoning (raw %q)", reasoning, resp.Choices[0].Message.Content, raw.Choices[0].Message.Content)
	}
	streamed, sr := streamChat(t, c, p)
	if sr != reasoning || streamed.Choices[0].Message.Content != "" {
		t.Errorf("streamed reasoning %q content %q, whole %q", sr, streamed.Choices[0].Message.Content, reasoning)
	}
	kept, err := c.Chat.Completions.New(context.Background(), p, option.WithJSONSet("reasoning_format", "none"))
	if err != nil {
		t.Fatal(err)
	}
	if got := kept.Choices[0].Message.Content; !strings.Contains(got, strings.TrimSpace(reasoning)) {
		t.Errorf("reasoning_format none: content %q, want the thought %q in it", got, reasoning)
	}
	_, err = c.Chat.Completions.New(context.Background(), p, option.WithJSONSet("reasoning_format", "loud"))
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 {
		t.Errorf("reasoning_format loud: %v, want 400", err)
	}

	q3 := fmt.Sprintf("[model]\nchat_template = %q\n", filepath.Join(dir, "chat", "templates", "Qwen3.jinja"))
	td3 := startDaemonFlags(t, q3, ServeFlags{Model: filepath.Join(dir, "arch", "tiny-qwen3.gguf"), HTTPSocket: "http"})
	c3 := td3.openai(t)
	p.Model = "tiny-qwen3"
	var prompts []int64
	for _, on := range []bool{true, false} {
		r, err := c3.Chat.Completions.New(context.Background(), p, option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": on}))
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, r.Usage.PromptTokens)
	}
	if prompts[1] <= prompts[0] { // enable_thinking false writes an empty <think></think> into the prompt
		t.Errorf("enable_thinking did not reach the template: prompts of %v tokens", prompts)
	}
}
