package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// TestRendersMatchJinja2: conversations beyond the reference set (tool
// calls and results, quotes, tabs, emoji, empty turns) render as Python's
// jinja2 renders them under Hugging Face's settings, for every template.
// It needs python3 with jinja2 (Debian's python3-jinja2; .ci/run installs it).
func TestRendersMatchJinja2(t *testing.T) {
	needJinja2(t)
	dir := filepath.Join(testmodels.Dir(t), "chat", "templates")
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if len(paths) == 0 {
		t.Fatal("no templates")
	}
	for _, path := range paths {
		matchJinja2(t, path, "testdata/conversations.json", "<s>", "</s>", nil)
	}
}

// TestHarmonyRendersMatchJinja2: OpenAI's gpt-oss template (harmony: the
// system and developer messages, tools as a TypeScript namespace, calls
// with their analysis, results, reasoning_effort and model_identity)
// renders byte for byte as Hugging Face's renderer renders it.
func TestHarmonyRendersMatchJinja2(t *testing.T) {
	needJinja2(t)
	const tmpl, convs = "testdata/harmony/openai-gpt-oss-120b.jinja", "testdata/harmony/conversations.json"
	matchJinja2(t, tmpl, convs, "<|startoftext|>", "<|return|>", nil)
	// As OpenAI's clients send the same turns: the reasoning as
	// reasoning_content, the arguments as JSON text.
	matchJinja2(t, tmpl, convs, "<|startoftext|>", "<|return|>", func(msgs []map[string]any) {
		for _, m := range msgs {
			if th, ok := m["thinking"]; ok {
				m["reasoning_content"] = th
				delete(m, "thinking")
			}
			calls, _ := m["tool_calls"].([]any)
			for _, c := range calls {
				f := c.(map[string]any)["function"].(map[string]any)
				args, _ := json.Marshal(f["arguments"])
				f["arguments"] = string(args)
			}
		}
	})
}

func needJinja2(t *testing.T) {
	if exec.Command("python3", "-c", "import jinja2").Run() != nil {
		t.Skip("python3 with jinja2 not found: apt-get install python3-jinja2")
	}
}

// matchJinja2 renders every conversation of convsPath with the template at
// path, with and without the generation prompt, here and in jinja2; as
// changes the messages rendered here (nil: none).
func matchJinja2(t *testing.T, path, convsPath, bos, eos string, as func([]map[string]any)) {
	t.Helper()
	convsJSON, err := os.ReadFile(convsPath)
	if err != nil {
		t.Fatal(err)
	}
	var convs []conversationFile
	if err := json.Unmarshal(convsJSON, &convs); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{"template": string(src), "conversations": json.RawMessage(convsJSON), "bos": bos, "eos": eos})
	cmd := exec.Command("python3", "testdata/render_jinja2.py")
	cmd.Stdin = bytes.NewReader(req)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: python: %v", path, err)
	}
	var want []struct{ Rendered, Error string }
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	tmpl, err := Compile(filepath.Base(path), string(src))
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		c := convs[i/2]
		if as != nil {
			var msgs []map[string]any
			if err := json.Unmarshal(c.Messages, &msgs); err != nil {
				t.Fatal(err)
			}
			as(msgs)
			c.Messages, _ = json.Marshal(msgs)
		}
		got, err := tmpl.Render(context.Background(), Input{Messages: c.Messages, Tools: c.Tools, AddGenerationPrompt: i%2 == 0,
			BOS: bos, EOS: eos, Now: refDate, Vars: c.Vars})
		name := filepath.Base(path) + "/" + c.Name
		var te *TemplateError
		switch {
		case w.Error != "":
			if !errors.As(err, &te) {
				t.Errorf("%s: got %q, %v; jinja2 raised %s", name, got, err, w.Error)
			}
		case err != nil:
			t.Errorf("%s (generation prompt %v): %v", name, i%2 == 0, err)
		case got != w.Rendered:
			t.Errorf("%s (generation prompt %v):\n got %q\nwant %q", name, i%2 == 0, got, w.Rendered)
		}
	}
}

// TestQwen35RendersMatchJinja2: Qwen3.5's and Qwen3-Coder's templates
// (Qwen3-Coder's XML calls, arguments printed as items of an object, tool results as user
// turns, the reasoning of turns since the last query) renders byte for
// byte as Hugging Face's renderer renders it; arguments sent as JSON text,
// as OpenAI's clients send them, render as the same object, keys in the
// order written (they raised "can only get item pairs from a mapping").
func TestQwen35RendersMatchJinja2(t *testing.T) {
	needJinja2(t)
	const path = "testdata/qwen35/Qwen3.5-4B.jinja"
	matchJinja2(t, path, "testdata/conversations.json", "", "<|im_end|>", nil)
	matchJinja2(t, "testdata/qwen35/Qwen3-Coder.jinja", "testdata/conversations.json", "", "<|im_end|>", nil)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Compile("qwen35", string(src))
	if err != nil {
		t.Fatal(err)
	}
	conv := func(args string) string {
		return `[{"role": "user", "content": "Define x"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
			"function": {"name": "lookup", "arguments": ` + args + `}}]}, {"role": "tool", "tool_call_id": "c1", "content": "a letter"}]`
	}
	var out [2]string
	for i, args := range []string{`{"word": "x", "limit": 2, "opts": {"b": 1, "a": [true]}}`,
		`"{\"word\": \"x\", \"limit\": 2, \"opts\": {\"b\": 1, \"a\": [true]}}"`} {
		if out[i], err = tmpl.Render(context.Background(), Input{Messages: []byte(conv(args)), Polyfill: true, AddGenerationPrompt: true}); err != nil {
			t.Fatal(err)
		}
	}
	if out[0] != out[1] || !strings.Contains(out[0], "<parameter=word>\nx\n</parameter>\n<parameter=limit>\n2\n</parameter>\n<parameter=opts>\n{\"b\": 1, \"a\": [true]}\n") {
		t.Errorf("arguments as an object:\n%s\nas JSON text:\n%s", out[0], out[1])
	}
}

// TestGemma4RendersMatchJinja2: Gemma 4's template (llama.cpp's copy)
// renders the shared conversations as Python's jinja2 does, and a call's
// arguments sent as JSON text as it renders them sent as an object (it
// writes a string as it is, inside its own call:NAME{key:value} syntax).
func TestGemma4RendersMatchJinja2(t *testing.T) {
	needJinja2(t)
	const path = "testdata/gemma4/gemma-4-31B-it.jinja"
	matchJinja2(t, path, "testdata/conversations.json", "<bos>", "<turn|>", nil)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Compile("gemma4", string(src))
	if err != nil {
		t.Fatal(err)
	}
	var out [2]string
	for i, args := range []string{`{"word": "x", "limit": 2, "opts": {"b": 1, "a": [true]}}`,
		`"{\"word\": \"x\", \"limit\": 2, \"opts\": {\"b\": 1, \"a\": [true]}}"`} {
		conv := `[{"role": "user", "content": "Define x"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
			"function": {"name": "lookup", "arguments": ` + args + `}}]}, {"role": "tool", "tool_call_id": "c1", "content": "a letter"}]`
		if out[i], err = tmpl.Render(context.Background(), Input{Messages: []byte(conv), Polyfill: true, AddGenerationPrompt: true}); err != nil {
			t.Fatal(err)
		}
	}
	if want := `<|tool_call>call:lookup{limit:2,opts:{a:[true],b:1},word:<|"|>x<|"|>}<tool_call|>`; out[0] != out[1] || !strings.Contains(out[0], want) {
		t.Errorf("arguments as an object:\n%s\nas JSON text:\n%s\nwant %s in both", out[0], out[1], want)
	}
}
