package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/jsontext"
	"github.com/batchd/batchd/serve"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/toolcall"
)

// qwen35Tools have no free-text string (a random model would write one
// until max_tokens): numbers, an enum, an object and an array.
var qwen35Tools = []struct{ name, schema string }{
	{"add", `{"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99}, "b": {"type": "integer", "minimum": -5, "maximum": 5}}, "required": ["a", "b"]}`},
	{"set_mode", `{"type": "object", "properties": {"mode": {"type": "string", "enum": ["fast", "slow", "off"]}, "level": {"type": "number", "minimum": 0, "maximum": 1}}, "required": ["mode"]}`},
	{"book", `{"type": "object", "properties": {"guest": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}},
		"required": ["name"]}, "nights": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 9}, "minItems": 1, "maxItems": 3}},
		"required": ["guest", "nights"]}`},
}

// TestQwen35ToolCalls: arch2's Qwen3.5 hybrid under Qwen3.5's own template
// speaks Qwen3-Coder's XML calls: with tool_choice required or named,
// greedy and at temperature 1, each answer is a call whose arguments
// (typed from the XML by the schema) validate against its schema; the
// calls stream as deltas that add up to the final ones; and a round trip
// (the call and its result sent back, arguments as JSON text) renders.
func TestQwen35ToolCalls(t *testing.T) {
	dir := testmodels.Dir(t)
	model := filepath.Join(dir, "arch2", "tiny-qwen35.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("%v (arch2's models)", err)
	}
	tmpl, _ := filepath.Abs("../chat/testdata/qwen35/Qwen3.5-4B.jinja")
	td := startDaemonFlags(t, fmt.Sprintf("[model]\nchat_template = %q\n", tmpl), ServeFlags{Model: model})
	if got := toolcall.Format(serve.ModelInfo(td.d.defaultModel()).ToolFormat); got != toolcall.Qwen3Coder {
		t.Fatalf("format %s, want %s", got, toolcall.Qwen3Coder)
	}
	checkToolChoices(t, td.dial(t), json.RawMessage(`{"enable_thinking": false}`))
}

// checkToolChoices asks for qwen35Tools with tool_choice required and each
// named tool, greedy and at temperature 1: each answer must be calls that
// validate against their schemas, no argument twice, streamed as deltas
// that add up to them; then a round trip (the call sent back as OpenAI's
// clients send it, arguments as JSON text, and its result) must render.
func checkToolChoices(t *testing.T, cl *client.Client, kwargs json.RawMessage) {
	t.Helper()
	var tools []map[string]any
	for _, tl := range qwen35Tools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": tl.name, "parameters": json.RawMessage(tl.schema)}})
	}
	toolsJSON, _ := json.Marshal(tools)
	msgs := []client.Message{{Role: "user", Content: "Add 2 and 3, then book a night for Ana."}}
	for _, choice := range []string{"required", "set_mode", "book", "add"} {
		for _, temp := range []float32{0, 1} {
			req := client.Request{Messages: msgs, Tools: toolsJSON, ToolChoice: choice, MaxTokens: 512, Temperature: temp, Seed: 11,
				TemplateKwargs: kwargs}
			streamed := map[int]*wire.ToolCall{}
			res, err := cl.Generate(context.Background(), req, func(ev client.Delta) error {
				for _, d := range ev.ToolCalls {
					c := streamed[d.Index]
					if c == nil {
						c = &wire.ToolCall{ID: d.ID, Name: d.Name}
						streamed[d.Index] = c
					}
					c.Arguments += d.Arguments
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s at %v: %v", choice, temp, err)
			}
			if res.FinishReason != "tool_calls" || len(res.ToolCalls) == 0 {
				t.Fatalf("%s at %v: finish %s, calls %v, text %q", choice, temp, res.FinishReason, res.ToolCalls, res.Text)
			}
			for i, call := range res.ToolCalls {
				if s := streamed[i]; s == nil || *s != call {
					t.Errorf("%s at %v: call %d streamed as %+v, final %+v", choice, temp, i, s, call)
				}
				checkCall(t, qwen35Tools, choice, temp, call)
				if v, err := jsontext.Parse([]byte(call.Arguments)); err != nil || len(v.Members) != len(uniqueKeys(v)) {
					t.Errorf("%s at %v: %s(%s): an argument twice", choice, temp, call.Name, call.Arguments)
				}
			}
		}
	}
	round := append(msgs, client.Message{Role: "assistant", Extra: map[string]any{"tool_calls": json.RawMessage(
		`[{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]`)}},
		client.Message{Role: "tool", Content: "5", Extra: map[string]any{"tool_call_id": "c1"}})
	res, err := cl.Generate(context.Background(), client.Request{Messages: round, Tools: toolsJSON, MaxTokens: 8, TemplateKwargs: kwargs}, nil)
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	if res.Usage.PromptTokens == 0 || res.FinishReason == "" {
		t.Fatalf("round trip: %+v", res)
	}
}

func uniqueKeys(v jsontext.Value) map[string]bool {
	keys := map[string]bool{}
	for _, m := range v.Members {
		keys[m.Key] = true
	}
	return keys
}
