package toolcall

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// xmlTools are tools with every kind of argument: a string, an integer,
// an object, an array, a union of string and number, one untyped, and a
// $ref to a string enum.
const xmlTools = `[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
	"properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"$ref": "#/$defs/unit"}},
	"required": ["city"], "$defs": {"unit": {"enum": ["c", "f"]}}}}},
	{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object",
	"properties": {"path": {"type": "string"}, "content": {"type": "string"}, "opts": {"type": "object"},
	"lines": {"type": "array", "items": {"type": "integer"}}, "size": {"type": ["string", "number"]}, "any": {}},
	"required": ["path", "content"]}}},
	{"type": "function", "function": {"name": "now"}}]`

func mustTools(t *testing.T, raw string) []Tool {
	t.Helper()
	tools, err := ParseTools([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// TestXMLParse reads Qwen3-Coder's calls as Qwen3.5 writes them (the
// format in its template's instructions), cut at every byte and at
// random: arguments typed by the schema, reasoning ended by </think> or by
// a call, malformed calls given back as text.
func TestXMLParse(t *testing.T) {
	tools := mustTools(t, xmlTools)
	think := ParseOptions{Format: Qwen3Coder, Calls: true, Tools: tools, Reasoning: &Think, ReasoningOpen: true}
	bare := ParseOptions{Format: Qwen3Coder, Calls: true, Tools: tools}
	checkParses(t, rand.New(rand.NewPCG(5, 6)), []parseCase{
		{"one call", think, "Let me look.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
			"", "Let me look.", []Call{{"id1", "get_weather", `{"city":"San Francisco","days":3}`}}},
		{"content first, two calls", think, "ok</think>\n\nI will check.\n\n<tool_call>\n<function=get_weather>\n<parameter=unit>\nc\n</parameter>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=now>\n</function>\n</tool_call>",
			"I will check.", "ok", []Call{{"id1", "get_weather", `{"unit":"c","city":"Oslo"}`}, {"id2", "now", `{}`}}},
		{"typed values", think, "</think><tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a \"b\".txt\n</parameter>\n<parameter=content>\nline 1\n\n  line \\3\n</parameter>\n" +
			"<parameter=opts>\n{\"mode\": 420, \"x\": [1, 2]}\n</parameter>\n<parameter=lines>\n[1,2]\n</parameter>\n<parameter=size>\n12.5\n</parameter>\n<parameter=any>\ntrue\n</parameter>\n</function>\n</tool_call>",
			"", "", []Call{{"id1", "write_file", `{"path":"/tmp/a \"b\".txt","content":"line 1\n\n  line \\3","opts":{"mode":420,"x":[1,2]},"lines":[1,2],"size":12.5,"any":true}`}}},
		{"union as text", think, "</think><tool_call>\n<function=write_file>\n<parameter=path>\nx\n</parameter>\n<parameter=content>\n</parameter>\n<parameter=size>\nlarge\n</parameter>\n<parameter=any>\nhi there\n</parameter>\n</function>\n</tool_call>",
			"", "", []Call{{"id1", "write_file", `{"path":"x","content":"","size":"large","any":"hi there"}`}}},
		{"a value holding tags", think, "</think><tool_call>\n<function=write_file>\n<parameter=path>\nx\n</parameter>\n<parameter=content>\n<parameter=y>\n</parameter\n</function>\n</parameter>\n</function>\n</tool_call>",
			"", "", []Call{{"id1", "write_file", `{"path":"x","content":"<parameter=y>\n</parameter\n</function>"}`}}},
		{"call inside the reasoning", think, "I need the weather.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call>",
			"", "I need the weather.", []Call{{"id1", "get_weather", `{"city":"Rome"}`}}},
		{"no call", think, "Hmm.</think>\n\nThe <tool_call> tag is how I call tools; <function=x> too.",
			"The <tool_call> tag is how I call tools; <function=x> too.", "Hmm.", nil},
		{"malformed call is text", think, "</think>Try <tool_call>\n{\"name\": \"now\"}\n</tool_call>",
			"Try <tool_call>\n{\"name\": \"now\"}\n</tool_call>", "", nil},
		{"cut short in a value", think, "</think><tool_call>\n<function=write_file>\n<parameter=path>\nabc\n</param",
			"", "", []Call{{"id1", "write_file", `{"path":"abc\n</param"}`}}},
		{"cut short in JSON", think, "</think><tool_call>\n<function=write_file>\n<parameter=opts>\n{\"a\": 1",
			"", "", []Call{{"id1", "write_file", `{"opts":"{\"a\": 1"}`}}},
		{"text after the calls", think, "</think><tool_call>\n<function=now>\n</function>\n</tool_call>\nDone.",
			"Done.", "", []Call{{"id1", "now", `{}`}}},
		{"missing </tool_call>", think, "</think><tool_call>\n<function=now>\n</function>\n<tool_call>\n<function=now>\n</function>\n</tool_call>",
			"", "", []Call{{"id1", "now", `{}`}, {"id2", "now", `{}`}}},
		{"bare function (Qwen3-Coder)", bare, "Sure.\n<function=get_weather>\n<parameter=city>\nLima\n</parameter>\n</function>\n</tool_call>",
			"Sure.", "", []Call{{"id1", "get_weather", `{"city":"Lima"}`}}},
		{"unknown function tag is text", bare, "<function=other>\nx\n</function>", "<function=other>\nx\n</function>", "", nil},
		{"unicode", think, "</think><tool_call>\n<function=get_weather>\n<parameter=city>\nZürich 東京 🌧\n</parameter>\n</function>\n</tool_call>",
			"", "", []Call{{"id1", "get_weather", `{"city":"Zürich 東京 🌧"}`}}},
	})
}

// TestXMLGrammar: the grammar takes the calls as Qwen3.5 is told to write
// them (required arguments in any order, optional ones after, values typed
// by the schema) and refuses what its parser could not read as the tools.
func TestXMLGrammar(t *testing.T) {
	tools := mustTools(t, xmlTools)
	accepts := func(gbnf, text string) bool { return grammarAccepts(t, gbnf, text) }
	call := func(fn string, args ...string) string {
		s := "<tool_call>\n<function=" + fn + ">\n"
		for i := 0; i < len(args); i += 2 {
			s += "<parameter=" + args[i] + ">\n" + args[i+1] + "\n</parameter>\n"
		}
		return s + "</function>\n</tool_call>"
	}
	req, err := Build(context.Background(), Qwen3Coder, tools, Choice{Mode: Required}, Options{Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]bool{
		call("get_weather", "city", "Oslo"):                                                                   true,
		call("get_weather", "city", "Oslo", "days", "3", "unit", "c"):                                         true,
		call("get_weather", "city", "line\n</parameter\n</parameter>x"):                                       true,
		call("get_weather", "city", "a") + "\n" + call("now"):                                                 true,
		call("write_file", "content", "x", "path", "p", "opts", `{"a": [1]}`):                                 true,
		call("write_file", "path", "p", "content", "", "size", "big"):                                         true,
		call("get_weather", "days", "3"):                                                                      false, // city is required
		call("get_weather", "city", "Oslo", "days", "three"):                                                  false,
		call("get_weather", "city", "Oslo", "unit", "k"):                                                      false, // an enum holds (llama.cpp's text is free)
		call("get_weather", "city", "Oslo", "unit", "f"):                                                      true,
		call("get_weather", "city", "a\n</parameter>\nb"):                                                     false,
		call("write_file", "path", "p", "content", "c", "lines", `{"a": 1}`):                                  false,
		call("other", "city", "x"):                                                                            false,
		call("get_weather", "city", "a", "unit", "c", "days", "1", "unit", "f"):                               false, // a key twice
		call("write_file", "path", "p", "content", "c", "any", "1", "size", "2", "opts", "{}", "lines", "[]"): true,
		call("get_weather", "city", "Oslo", "country", "NO"):                                                  false,
		"I will call.\n" + call("now"):                                                                        false,
		strings.TrimPrefix(call("now"), "<tool_call>\n"):                                                      false,
	} {
		if got := accepts(req.GBNF, text); got != want {
			t.Errorf("required grammar on %q: %v, want %v", text, got, want)
		}
	}
	auto, err := Build(context.Background(), Qwen3Coder, tools, Choice{Mode: Auto}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !auto.Lazy || fmt.Sprint(auto.Triggers) != "[<tool_call>]" || fmt.Sprint(auto.Preserve) != "[<tool_call> </tool_call>]" {
		t.Fatalf("auto: lazy %v triggers %q preserve %q", auto.Lazy, auto.Triggers, auto.Preserve)
	}
	if accepts(auto.GBNF, call("now")+"\n"+call("now")) {
		t.Error("two calls without parallel_tool_calls")
	}
	bare, err := Build(context.Background(), Qwen3Coder, tools, Choice{Mode: Auto}, Options{Bare: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[<tool_call> <function=get_weather> <function=write_file> <function=now>]"; fmt.Sprint(bare.Triggers) != want {
		t.Fatalf("bare triggers %q, want %s", bare.Triggers, want)
	}
	if !accepts(bare.GBNF, strings.TrimPrefix(call("now"), "<tool_call>\n")) {
		t.Error("Qwen3-Coder's first call without <tool_call>")
	}
	named, err := Build(context.Background(), Qwen3Coder, tools, Choice{Mode: Named, Name: "now"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !accepts(named.GBNF, call("now")) || accepts(named.GBNF, call("get_weather", "city", "x")) {
		t.Error("named: want now only")
	}
}

// TestTriggersAreBounded: no format gives the engine more lazy triggers
// than it takes (Llama 3.x gave one per tool: 27 tools were refused).
func TestTriggersAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range MaxTools {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type": "function", "function": {"name": "f%d"}}`, i)
	}
	tools := mustTools(t, b.String()+"]")
	for _, f := range Formats {
		for _, bare := range []bool{false, true} {
			p, err := Build(context.Background(), f, tools, Choice{Mode: Auto}, Options{Bare: bare})
			if err != nil {
				t.Fatal(f, err)
			}
			if len(p.Triggers) > MaxTriggers {
				t.Errorf("%s: %d triggers for %d tools, at most %d", f, len(p.Triggers), len(tools), MaxTriggers)
			}
		}
	}
}

// TestDetectQwen3Coder: Qwen3.5's template (llama.cpp's copy) is read as
// Qwen3-Coder's format, not Hermes; Qwen 3's stays Hermes.
func TestDetectQwen3Coder(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "chat", "testdata", "qwen35", "Qwen3.5-4B.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if f := Detect(string(src)); f != Qwen3Coder {
		t.Errorf("Qwen3.5's template: %s, want %s", f, Qwen3Coder)
	}
	if r := DetectReasoning(string(src)); r == nil || *r != Think {
		t.Errorf("Qwen3.5's reasoning tags: %v", r)
	}
	coder, err := os.ReadFile(filepath.Join("..", "chat", "testdata", "qwen35", "Qwen3-Coder.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if f, r := Detect(string(coder)), DetectReasoning(string(coder)); f != Qwen3Coder || r != nil {
		t.Errorf("Qwen3-Coder's template: %s, reasoning %v; want %s without", f, r, Qwen3Coder)
	}
	nl := `{{- '<tool_call><function=' ~ tool_call.name ~ '>' }}<parameter=`
	if f := Detect(nl); f != Hermes {
		t.Errorf("a template without newlines between the tags: %s, want hermes", f)
	}
}
