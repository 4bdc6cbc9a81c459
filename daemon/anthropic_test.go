package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
)

func (td *testDaemon) anthropic(t *testing.T) anthropic.Client {
	t.Helper()
	// Greedy: the SDK's params have no temperature any more; the API still takes it.
	return anthropic.NewClient(aoption.WithBaseURL("http://batchd/"), aoption.WithAPIKey("unused-on-a-unix-socket"),
		aoption.WithHTTPClient(unixHTTPClient(td.d.cfg.Server.HTTPSocket)), aoption.WithMaxRetries(0),
		aoption.WithJSONSet("temperature", 0))
}

func anthropicTools() []anthropic.ToolUnionParam {
	var out []anthropic.ToolUnionParam
	for _, t := range acceptTools {
		var schema map[string]any
		if err := json.Unmarshal([]byte(t.schema), &schema); err != nil {
			panic(err)
		}
		req, _ := schema["required"].([]any)
		var required []string
		for _, r := range req {
			required = append(required, r.(string))
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: t.name, Description: anthropic.String("the " + t.name + " tool"),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: schema["properties"], Required: required}}})
	}
	return out
}

// streamMessage streams params through the SDK's accumulator.
func streamMessage(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	s := c.Messages.NewStreaming(context.Background(), p)
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAnthropicMessagesSDK drives /v1/messages with Anthropic's official Go
// SDK: text whole and streamed alike, stop_sequences with the sequence
// that matched, tool_choice any and a named tool giving tool_use blocks
// whose input fits the tool (streamed alike), a second turn carrying the
// tool_result, structured output through output_config, count_tokens
// agreeing with usage, and refusals by name in Anthropic's error shape.
func TestAnthropicMessagesSDK(t *testing.T) {
	td := startQwenChat(t, "")
	c := td.anthropic(t)
	ctx := context.Background()
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is 2 plus 3? Use the add tool."))}
	base := anthropic.MessageNewParams{Model: "tiny-qwen2", MaxTokens: 24, Messages: msgs,
		System: []anthropic.TextBlockParam{{Text: "You are terse."}}}

	whole, err := c.Messages.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Role != "assistant" || len(whole.Content) != 1 || whole.Content[0].Type != "text" || whole.StopReason != "max_tokens" ||
		whole.Usage.OutputTokens != 24 || !strings.HasPrefix(whole.ID, "msg_") {
		t.Fatalf("message %+v", whole)
	}
	text := whole.Content[0].Text
	streamed := streamMessage(t, c, base)
	if len(streamed.Content) != 1 || streamed.Content[0].Text != text || streamed.StopReason != "max_tokens" {
		t.Errorf("streamed %+v, whole %q", streamed.Content, text)
	}
	count, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "tiny-qwen2", Messages: msgs,
		System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: []anthropic.TextBlockParam{{Text: "You are terse."}}}})
	if err != nil || count.InputTokens != whole.Usage.InputTokens {
		t.Errorf("count_tokens %+v (%v), usage %d", count, err, whole.Usage.InputTokens)
	}

	// A stop sequence from the middle of the greedy text ends it there;
	// one that never comes leaves max_tokens.
	if r := []rune(text); len(r) > 6 {
		for _, stop := range []string{string(r[3:5]), "never-written"} {
			p := base
			p.StopSequences = []string{stop}
			m, err := c.Messages.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case stop == "never-written" && (m.StopReason != "max_tokens" || m.StopSequence != ""):
				t.Errorf("stop %q: %s %q", stop, m.StopReason, m.StopSequence)
			case stop != "never-written" && (m.StopReason != "stop_sequence" || m.StopSequence != stop ||
				len(m.Content) > 0 && !strings.HasPrefix(text, m.Content[0].Text+stop)):
				t.Errorf("stop %q: %s %q %+v", stop, m.StopReason, m.StopSequence, m.Content)
			}
		}
	}

	// Tools: any and a named tool.
	withTools := base
	withTools.Tools, withTools.MaxTokens = anthropicTools(), 400
	var first *anthropic.Message
	for _, choice := range []anthropic.ToolChoiceUnionParam{{OfAny: &anthropic.ToolChoiceAnyParam{}},
		{OfTool: &anthropic.ToolChoiceToolParam{Name: "book"}}} {
		p := withTools
		p.ToolChoice = choice
		m, err := c.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var use *anthropic.ContentBlockUnion
		for i := range m.Content {
			if m.Content[i].Type == "tool_use" {
				use = &m.Content[i]
			}
		}
		if m.StopReason != "tool_use" || use == nil || !strings.HasPrefix(use.ID, "toolu_") ||
			choice.OfTool != nil && use.Name != "book" {
			t.Fatalf("tool choice: %s %+v", m.StopReason, m.Content)
		}
		if err := jsonvalid.Validate([]byte(schemaOf(use.Name)), use.Input); err != nil {
			t.Errorf("%s(%s): %v", use.Name, use.Input, err)
		}
		s := streamMessage(t, c, p)
		last := s.Content[len(s.Content)-1]
		if s.StopReason != "tool_use" || last.Type != "tool_use" || last.Name != use.Name || string(compact(last.Input)) != string(compact(use.Input)) {
			t.Errorf("streamed %s %+v, whole %+v", s.StopReason, s.Content, m.Content)
		}
		if first == nil {
			first = m
		}
	}
	// The second turn: the call and its result.
	var useID string
	for _, b := range first.Content {
		if b.Type == "tool_use" {
			useID = b.ID
		}
	}
	turn2 := withTools
	turn2.MaxTokens = 8
	turn2.Messages = append(append([]anthropic.MessageParam{}, msgs...), first.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(useID, `{"result": 5}`, false)))
	second, err := c.Messages.New(ctx, turn2)
	if err != nil {
		t.Fatal(err)
	}
	if second.Usage.InputTokens <= first.Usage.InputTokens {
		t.Errorf("second turn's prompt of %d tokens: the call and its result are not in it (first %d)", second.Usage.InputTokens,
			first.Usage.InputTokens)
	}

	// Structured output.
	schema := `{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["n"]}`
	var sm map[string]any
	_ = json.Unmarshal([]byte(schema), &sm)
	p := base
	p.MaxTokens = 200
	p.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: sm}}
	m, err := c.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || jsonvalid.Validate([]byte(schema), []byte(m.Content[0].Text)) != nil {
		t.Errorf("output_config.format: %+v", m.Content)
	}

	// Refusals name the field.
	for _, bad := range []struct {
		want string
		p    anthropic.MessageNewParams
		opt  aoption.RequestOption
	}{
		{"max_tokens", base, aoption.WithJSONDel("max_tokens")},
		{"server tool", base, aoption.WithJSONSet("tools", []any{map[string]any{"type": "bash_20250124", "name": "bash"}})},
		{"tool_choice", base, aoption.WithJSONSet("tool_choice", map[string]any{"type": "sometimes"})},
		{"budget_tokens", base, aoption.WithJSONSet("thinking", map[string]any{"type": "enabled", "budget_tokens": 10})},
		{"image", base, aoption.WithJSONSet("messages", []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "AAAA"}}}}})},
		{"mcp_servers", base, aoption.WithJSONSet("mcp_servers", []any{map[string]any{"type": "url", "url": "http://x", "name": "x"}})},
	} {
		_, err := c.Messages.New(ctx, bad.p, bad.opt)
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Error(), bad.want) ||
			!strings.Contains(ae.Error(), "invalid_request_error") {
			t.Errorf("%s: %v, want a 400 invalid_request_error naming it", bad.want, err)
		}
	}
}

func compact(b []byte) []byte {
	var out strings.Builder
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	enc := json.NewEncoder(&out)
	_ = enc.Encode(v)
	return []byte(out.String())
}

// TestAnthropicThinking: on a template whose prompt opens a <think> block
// (DeepSeek R1's), thinking enabled returns the thought as a thinking
// block (streamed as thinking_delta, accumulated alike); disabled returns
// none.
func TestAnthropicThinking(t *testing.T) {
	dir := testmodels.Dir(t)
	cfg := fmt.Sprintf("[model]\nchat_template = %q\n", filepath.Join(dir, "chat", "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"))
	td := startDaemonFlags(t, cfg, ServeFlags{Model: filepath.Join(dir, "arch", "tiny-qwen2.gguf"), HTTPSocket: "http"})
	c := td.anthropic(t)
	p := anthropic.MessageNewParams{Model: "tiny-qwen2", MaxTokens: 1100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Why is the sky blue?"))},
		Thinking: anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: 1024}}}
	m, err := c.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) == 0 || m.Content[0].Type != "thinking" || m.Content[0].Thinking == "" {
		t.Fatalf("thinking enabled: %+v", m.Content)
	}
	s := streamMessage(t, c, p)
	if len(s.Content) == 0 || s.Content[0].Type != "thinking" || s.Content[0].Thinking != m.Content[0].Thinking {
		t.Errorf("streamed %+v, whole %+v", s.Content, m.Content)
	}
	p.Thinking = anthropic.ThinkingConfigParamUnion{OfDisabled: &anthropic.ThinkingConfigDisabledParam{}}
	off, err := c.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range off.Content {
		if b.Type == "thinking" {
			t.Errorf("thinking disabled: %+v", off.Content)
		}
	}
}
