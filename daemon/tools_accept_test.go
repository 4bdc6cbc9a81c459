package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/serve"
	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/toolcall"
)

// acceptTools are functions whose schemas bound every value (strings by
// maxLength, arrays by maxItems), so that a random model's call ends.
var acceptTools = []struct{ name, schema string }{
	{"get_weather", `{"type": "object", "properties": {"location": {"type": "string", "maxLength": 24},
		"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}`},
	{"add", `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "minimum": -5, "maximum": 5}}, "required": ["a", "b"]}`},
	{"book", `{"type": "object", "properties": {"guest": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
		"vip": {"type": "boolean"}}, "required": ["name"]}, "nights": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 9},
		"minItems": 1, "maxItems": 3}, "note": {"type": ["string", "null"], "maxLength": 8}}, "required": ["guest", "nights"]}`},
}

func acceptToolsJSON() json.RawMessage {
	var tools []map[string]any
	for _, t := range acceptTools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": t.name,
			"description": "the " + t.name + " tool", "parameters": json.RawMessage(t.schema)}})
	}
	b, _ := json.Marshal(tools)
	return b
}

// TestRequiredAndNamedCallsValidate: tool_choice required and a named
// function, greedy and at temperature 1, on every arch model (with its own
// template, or a real one where it has none) and in every format those
// templates speak: each answer is a call, of the named function when one
// is named, whose arguments validate against its schema (an independent
// validator).
func TestRequiredAndNamedCallsValidate(t *testing.T) {
	dir := testmodels.Dir(t)
	tmpl := func(name string) string { return filepath.Join(dir, "chat", "templates", name) }
	for _, c := range []struct {
		model, template string
		format          toolcall.Format
	}{
		{"tiny-qwen2.gguf", "", toolcall.Hermes},
		{"tiny-qwen3.gguf", "", toolcall.Hermes},
		{"tiny-llama3.gguf", "", toolcall.Generic},
		{"tiny-mistral.gguf", "", toolcall.Generic},
		{"tiny-gemma2.gguf", tmpl("google-gemma-2-2b-it.jinja"), toolcall.Generic},
		{"tiny-phi3.gguf", tmpl("microsoft-Phi-3.5-mini-instruct.jinja"), toolcall.Generic},
		{"tiny-llama3.gguf", tmpl("meta-llama-Llama-3.1-8B-Instruct.jinja"), toolcall.Llama3},
		{"tiny-mistral.gguf", tmpl("mistralai-Mistral-Nemo-Instruct-2407.jinja"), toolcall.MistralNemo},
		{"tiny-phi3.gguf", "testdata/phi4-mini.jinja", toolcall.Phi4},
	} {
		t.Run(c.model+"/"+string(c.format), func(t *testing.T) {
			cfg := ""
			if c.template != "" {
				abs, _ := filepath.Abs(c.template)
				cfg = fmt.Sprintf("[model]\nchat_template = %q\n", abs)
			}
			td := startDaemonFlags(t, cfg, ServeFlags{Model: filepath.Join(dir, "arch", c.model)})
			if got := toolcall.Format(serve.ModelInfo(td.d.defaultModel()).ToolFormat); got != c.format {
				t.Fatalf("format %s, want %s", got, c.format)
			}
			cl := td.dial(t)
			msgs := []client.Message{{Role: "system", Content: "You are a helpful assistant."},
				{Role: "user", Content: "Book two nights for Ana, then tell me the weather in Paris."}}
			for _, choice := range []string{"required", "book", "add"} {
				for _, temp := range []float32{0, 1} {
					req := client.Request{Messages: msgs, Tools: acceptToolsJSON(), ToolChoice: choice, NoParallelToolCalls: true,
						MaxTokens: 1024, Temperature: temp, Seed: 7}
					res, err := cl.Generate(context.Background(), req, nil)
					if err != nil {
						t.Fatalf("%s at %v: %v", choice, temp, err)
					}
					if res.FinishReason != "tool_calls" || len(res.ToolCalls) == 0 {
						t.Fatalf("%s at %v: finish %s, calls %v, text %q", choice, temp, res.FinishReason, res.ToolCalls, res.Text)
					}
					checkCall(t, acceptTools, choice, temp, res.ToolCalls[0])
				}
			}
		})
	}
}

// checkCall fails t unless call is of one of tools (the one choice names,
// unless it is "required") and its arguments validate against its schema
// (an independent validator).
func checkCall(t *testing.T, tools []struct{ name, schema string }, choice string, temp float32, call wire.ToolCall) {
	t.Helper()
	schema := ""
	for _, tl := range tools {
		if tl.name == call.Name {
			schema = tl.schema
		}
	}
	if schema == "" || choice != "required" && call.Name != choice {
		t.Fatalf("%s at %v: a call of %q", choice, temp, call.Name)
	}
	if err := jsonvalid.Validate([]byte(schema), []byte(call.Arguments)); err != nil {
		t.Errorf("%s at %v: %s(%s): %v", choice, temp, call.Name, call.Arguments, err)
	}
}
