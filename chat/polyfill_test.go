package chat

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

func sharedTemplate(t *testing.T, name string) *Template {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "chat", "templates", name))
	if err != nil {
		t.Skipf("%v (the shared chat templates)", err)
	}
	tmpl, err := Compile(name, string(src))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tmpl.Close() })
	return tmpl
}

const weatherTools = `[{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
	"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]`

// twoCalls is a turn with two calls and both results, then a question.
const twoCalls = `[{"role": "user", "content": "Paris and Oslo?"},
	{"role": "assistant", "content": null, "tool_calls": [
		{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
		{"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
	{"role": "tool", "tool_call_id": "c1", "content": "sunny 21"},
	{"role": "tool", "tool_call_id": "c2", "content": "rain 9"},
	{"role": "user", "content": "And tomorrow?"}]`

// inOrder fails unless each of parts occurs in s after the one before.
func inOrder(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	rest := s
	for _, p := range parts {
		i := strings.Index(rest, p)
		if i < 0 {
			t.Fatalf("%s: %q missing (in order %q) from:\n%s", what, p, parts, s)
		}
		rest = rest[i+len(p):]
	}
}

// TestPolyfillOneCallPerTurn: Llama 3.1's template raises on a turn with
// two calls (llama.cpp's server answers 500); calls in a history are
// always polyfilled: each call is a turn of its own followed by its
// result, in the order they were made.
func TestPolyfillOneCallPerTurn(t *testing.T) {
	tmpl := sharedTemplate(t, "meta-llama-Llama-3.1-8B-Instruct.jinja")
	in := Input{Messages: []byte(twoCalls), Tools: []byte(weatherTools), AddGenerationPrompt: true, BOS: "<|begin_of_text|>", Polyfill: true}
	out, err := tmpl.Render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "llama 3.1", out, `"Paris"`, "sunny 21", `"Oslo"`, "rain 9", "And tomorrow?", "<|start_header_id|>assistant<|end_header_id|>\n\n")
	if strings.Count(out, `{"name": "get_weather", "parameters"`) != 2 {
		t.Errorf("want each call once:\n%s", out)
	}
}

// TestPolyfillSystemAndTools: Gemma 2's template refuses a system turn and
// renders no tools: the system text and the tools go into the first user
// turn, calls and results into JSON text the template prints.
func TestPolyfillSystemAndTools(t *testing.T) {
	tmpl := sharedTemplate(t, "google-gemma-2-2b-it.jinja")
	msgs := `[{"role": "system", "content": "Be brief."}, ` + strings.TrimPrefix(twoCalls, "[")
	in := Input{Messages: []byte(msgs), Tools: []byte(weatherTools), AddGenerationPrompt: true, BOS: "<bos>"}
	if _, err := tmpl.Render(context.Background(), in); err == nil {
		t.Fatal("unpolyfilled: Gemma's template took a system turn")
	}
	in.Polyfill = true
	out, err := tmpl.Render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "gemma 2", out, "<start_of_turn>user\n", "Be brief.", "get_weather", "Weather of a city", "Paris and Oslo?",
		"<start_of_turn>model\n", `"Paris"`, `"Oslo"`, "sunny 21", "rain 9", "And tomorrow?", "<start_of_turn>model\n")
	if strings.Contains(out, "system") {
		t.Errorf("a system role left in:\n%s", out)
	}
}

// TestPolyfillObjectArguments: Qwen 2.5's template prints arguments with
// tojson, so arguments sent as JSON text (OpenAI's shape) become an object
// first (as llama.cpp does) instead of a quoted string.
func TestPolyfillObjectArguments(t *testing.T) {
	tmpl := sharedTemplate(t, "Qwen-Qwen2.5-7B-Instruct.jinja")
	in := Input{Messages: []byte(twoCalls), Tools: []byte(weatherTools), AddGenerationPrompt: true, Polyfill: true}
	out, err := tmpl.Render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "qwen 2.5", out, `<tool_call>`, `"arguments": {"city": "Paris"}`, `"arguments": {"city": "Oslo"}`,
		"<tool_response>\nsunny 21", "<tool_response>\nrain 9")
	if strings.Contains(out, `\"city\"`) {
		t.Errorf("arguments rendered as a quoted string:\n%s", out)
	}
}

// TestPolyfillSystemInstruction: a format's instruction joins the client's
// system message (one system turn, the client's text kept), or becomes one.
func TestPolyfillSystemInstruction(t *testing.T) {
	tmpl, _, err := Builtin("chatml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ msgs, want string }{
		{`[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]`, "Be brief.\n\nRespond in JSON."},
		{`[{"role": "user", "content": "Hi"}]`, "Respond in JSON."},
	} {
		out, err := tmpl.Render(context.Background(), Input{Messages: []byte(tc.msgs), System: "Respond in JSON.", Polyfill: true})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(out, "<|im_start|>system\n") != 1 {
			t.Errorf("%s: want one system turn:\n%s", tc.msgs, out)
		}
		inOrder(t, "system", out, "<|im_start|>system\n", tc.want, "<|im_end|>", "<|im_start|>user\nHi")
	}
}
