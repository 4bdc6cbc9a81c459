package toolcall

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseAll runs text through a parser in pieces cut at the given byte
// offsets (character boundaries) and checks that the deltas add up to the
// parser's calls; it returns content, reasoning and calls.
func parseAll(t *testing.T, o ParseOptions, text string, cuts []int) (string, string, []Call) {
	t.Helper()
	n := 0
	o.NewID = func() string { n++; return fmt.Sprintf("id%d", n) }
	p := NewParser(o)
	var content, reasoning strings.Builder
	var calls []Call
	add := func(d Delta) {
		content.WriteString(d.Content)
		reasoning.WriteString(d.Reasoning)
		for _, c := range d.Calls {
			if c.Index == len(calls) {
				if c.Name == "" {
					t.Fatalf("call %d's first delta has no name", c.Index)
				}
				calls = append(calls, Call{ID: c.ID, Name: c.Name})
			} else if c.Index != len(calls)-1 || c.Name != "" || c.ID != "" {
				t.Fatalf("delta %+v out of order (%d calls so far)", c, len(calls))
			}
			calls[c.Index].Arguments += c.Arguments
		}
		for _, s := range []string{d.Content, d.Reasoning} {
			if !utf8.ValidString(s) {
				t.Fatalf("delta splits a character: %q", s)
			}
		}
	}
	last := 0
	for _, c := range append(cuts, len(text)) {
		add(p.Push(text[last:c]))
		last = c
	}
	add(p.Finish())
	if fmt.Sprint(calls) != fmt.Sprint(p.Calls()) {
		t.Fatalf("deltas add up to %v, the parser holds %v", calls, p.Calls())
	}
	return content.String(), reasoning.String(), calls
}

// cutsOf are ways to stream text: whole, every character, and random.
func cutsOf(text string, rng *rand.Rand) [][]int {
	var each []int
	for i := range text {
		if i > 0 {
			each = append(each, i)
		}
	}
	out := [][]int{nil, each}
	for range 4 {
		var r []int
		for _, i := range each {
			if rng.IntN(4) == 0 {
				r = append(r, i)
			}
		}
		out = append(out, r)
	}
	return out
}

// TestParseMatchesLlamaCpp parses the raw text of each reference case and
// compares content and calls with llama.cpp's response. Text cut short by
// max_tokens is content there and here alike in these cases.
func TestParseMatchesLlamaCpp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 0
	for _, c := range toolCases(t) {
		f, ok := formatOfLabel[c.ChatFormat]
		if !ok {
			continue
		}
		n++
		t.Run(c.ID, func(t *testing.T) {
			want := c.Response.Choices[0].Message
			for _, cuts := range cutsOf(c.RawText, rng) {
				content, _, calls := parseAll(t, ParseOptions{Format: f, Calls: true}, c.RawText, cuts)
				wantContent := ""
				if want.Content != nil {
					wantContent = *want.Content
				}
				if content != wantContent {
					t.Fatalf("content %q, llama.cpp %q", content, wantContent)
				}
				if len(calls) != len(want.ToolCalls) {
					t.Fatalf("%d calls %v, llama.cpp %d", len(calls), calls, len(want.ToolCalls))
				}
				for i, wc := range want.ToolCalls {
					got := calls[i]
					if got.Name != wc.Function.Name || got.Arguments != wc.Function.Arguments {
						t.Errorf("call %d: %s %s, llama.cpp %s %s", i, got.Name, got.Arguments, wc.Function.Name, wc.Function.Arguments)
					}
					if wc.ID != "" && got.ID != wc.ID {
						t.Errorf("call %d: id %q, llama.cpp %q", i, got.ID, wc.ID)
					}
				}
			}
		})
	}
	if n < 14 {
		t.Errorf("%d cases parsed; the references have 14 tool cases", n)
	}
}

type parseCase struct {
	name      string
	o         ParseOptions
	text      string
	content   string
	reasoning string
	calls     []Call // ids: id1, id2, ... for generated ones
}

var parseCases = []parseCase{
	{name: "hermes text only", o: ParseOptions{Format: Hermes, Calls: true},
		text: "Paris is sunny.\n", content: "Paris is sunny.\n"},
	{name: "hermes content then two calls", o: ParseOptions{Format: Hermes, Calls: true},
		text:    "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": -0}}\n</tool_call>",
		content: "Let me check.",
		calls:   []Call{{"id1", "get_weather", `{"location":"Paris"}`}, {"id2", "add", `{"a":1,"b":0}`}}},
	{name: "hermes without tools reads no calls", o: ParseOptions{Format: Hermes},
		text: "<tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>", content: "<tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>"},
	{name: "hermes malformed call is content", o: ParseOptions{Format: Hermes, Calls: true},
		text: "ok <tool_call>{\"nam: 1}</tool_call>", content: "ok<tool_call>{\"nam: 1}</tool_call>"},
	{name: "hermes cut before the name", o: ParseOptions{Format: Hermes, Calls: true},
		text: "<tool_call>\n{\"na", content: "<tool_call>\n{\"na"},
	{name: "hermes arguments as a string", o: ParseOptions{Format: Hermes, Calls: true},
		text:  `<tool_call>{"name": "f", "arguments": "{\"q\": \"a\\\"b\"}"}</tool_call>`,
		calls: []Call{{"id1", "f", `{"q": "a\"b"}`}}},
	{name: "hermes numbers and strings as nlohmann writes them", o: ParseOptions{Format: Hermes, Calls: true},
		text:  `<tool_call>{"name": "f", "arguments": {"x": [1.50, 1e2, 2.5E-7, 123456789012345678, -1.0e20, 0.1], "s": "\u00e9\/\u001f\ud83d\ude00", "t": true, "n": null, "o": {}, "a": []}}</tool_call>`,
		calls: []Call{{"id1", "f", `{"x":[1.5,100.0,2.5e-07,123456789012345678,-1e+20,0.1],"s":"é/\u001f😀","t":true,"n":null,"o":{},"a":[]}`}}},
	{name: "hermes non-ASCII text in arguments", o: ParseOptions{Format: Hermes, Calls: true},
		text:  "<tool_call>{\"name\": \"f\", \"arguments\": {\"city\": \"Zürich 東京 😀\", \"q\": \"a\\\\b\"}}</tool_call>",
		calls: []Call{{"id1", "f", `{"city":"Zürich 東京 😀","q":"a\\b"}`}}},
	{name: "llama3 call", o: ParseOptions{Format: Llama3, Calls: true},
		text:  `{"name": "add", "parameters": {"a": 2, "b": 3}}`,
		calls: []Call{{"id1", "add", `{"a":2,"b":3}`}}},
	{name: "llama3 python tag and type", o: ParseOptions{Format: Llama3, Calls: true},
		text:  `<|python_tag|>{"type": "function", "name": "add", "parameters": {"a": 2, "b": 3}}`,
		calls: []Call{{"id1", "add", `{"a":2,"b":3}`}}},
	{name: "llama3 JSON that is no call is content", o: ParseOptions{Format: Llama3, Calls: true},
		text: `Here: {"city": "Paris", "n": {"x": 1}} done`, content: `Here: {"city": "Paris", "n": {"x": 1}} done`},
	{name: "nemo two calls with ids", o: ParseOptions{Format: MistralNemo, Calls: true},
		text:  `[TOOL_CALLS][{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "abcDEF123"}, {"name": "add", "arguments": "{\"a\": 3}", "id": "xyz987654"}]`,
		calls: []Call{{"abcDEF123", "add", `{"a":1,"b":2}`}, {"xyz987654", "add", `{"a": 3}`}}},
	{name: "phi4 array", o: ParseOptions{Format: Phi4, Calls: true},
		text:    "Sure. <|tool_call|>[{\"name\": \"add\", \"arguments\": {\"a\": 1}}, {\"name\": \"sub\", \"arguments\": {}}]<|/tool_call|>",
		content: "Sure.", calls: []Call{{"id1", "add", `{"a":1}`}, {"id2", "sub", `{}`}}},
	{name: "phi4 functools", o: ParseOptions{Format: Phi4, Calls: true},
		text:  `functools[{"name": "add", "arguments": {"a": 1}}]`,
		calls: []Call{{"id1", "add", `{"a":1}`}}},
	{name: "deepseek r1 thought and two calls", o: ParseOptions{Format: DeepSeekR1, Calls: true, Reasoning: &Think, ReasoningOpen: true},
		text:      "Need weather.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"location\": \"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>add\n```json\n{\"a\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		reasoning: "Need weather.",
		calls:     []Call{{"id1", "get_weather", `{"location":"Paris"}`}, {"id2", "add", `{"a":1}`}}},
	{name: "generic response", o: ParseOptions{Format: Generic, Calls: true},
		text: "{\"response\": \"Hello \\\"you\\\"\\n\"}", content: "Hello \"you\"\n"},
	{name: "generic call", o: ParseOptions{Format: Generic, Calls: true},
		text:  `{"tool_call": {"name": "add", "arguments": {"a": 1, "b": 2}}}`,
		calls: []Call{{"id1", "add", `{"a":1,"b":2}`}}},
	{name: "generic parallel calls with ids", o: ParseOptions{Format: Generic, Calls: true},
		text:  `{"tool_calls": [{"name": "add", "arguments": {"a": 1}, "id": "c001"}, {"name": "add", "arguments": {"a": 2}, "id": "c002"}]}`,
		calls: []Call{{"c001", "add", `{"a":1}`}, {"c002", "add", `{"a":2}`}}},
	{name: "generic plain text", o: ParseOptions{Format: Generic, Calls: true},
		text: "just text", content: "just text"},
	{name: "qwen3 thinks then calls", o: ParseOptions{Format: Hermes, Calls: true, Reasoning: &Think},
		text:      "<think>\nThe user wants weather.  \n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>",
		reasoning: "The user wants weather.",
		calls:     []Call{{"id1", "get_weather", `{"location":"Paris"}`}}},
	{name: "thought then text", o: ParseOptions{Format: Hermes, Reasoning: &Think},
		text: "<think>hmm</think>\n\nIt is 4.", reasoning: "hmm", content: "It is 4."},
	{name: "no thought", o: ParseOptions{Format: Hermes, Reasoning: &Think},
		text: "<thin air is thin", content: "<thin air is thin"},
	{name: "a call inside the thought is no call", o: ParseOptions{Format: Hermes, Calls: true, Reasoning: &Think},
		text: "<think><tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call></think>ok", reasoning: "<tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>", content: "ok"},
	{name: "reasoning_format none keeps the block", o: ParseOptions{Format: Hermes, Calls: true, Reasoning: &Think, KeepReasoning: true},
		text:    "<think>\nhm\n</think>\n\n<tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>",
		content: "<think>\nhm\n</think>", calls: []Call{{"id1", "x", `{}`}}},
	{name: "reasoning opened by the prompt, cut short", o: ParseOptions{Format: DeepSeekR1, Reasoning: &Think, ReasoningOpen: true},
		text: "\nstill thinking ", reasoning: "still thinking"},
}

func TestParse(t *testing.T) {
	checkParses(t, rand.New(rand.NewPCG(3, 4)), parseCases)
}

// checkParses parses each case whole, a character at a time and cut at
// random, and compares content, reasoning and calls.
func checkParses(t *testing.T, rng *rand.Rand, cases []parseCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, cuts := range cutsOf(c.text, rng) {
				content, reasoning, calls := parseAll(t, c.o, c.text, cuts)
				if content != c.content || reasoning != c.reasoning || fmt.Sprint(calls) != fmt.Sprint(c.calls) {
					t.Fatalf("cut at %v:\ncontent %q reasoning %q calls %v\nwant    %q reasoning %q calls %v",
						cuts, content, reasoning, calls, c.content, c.reasoning, c.calls)
				}
			}
		})
	}
}

func TestFormatDouble(t *testing.T) {
	for in, want := range map[float64]string{1: "1.0", 0.5: "0.5", 1e14: "100000000000000.0", 1e15: "1e+15", 1e16: "1e+16",
		1.5e-5: "1.5e-05", 0.0001: "0.0001", 123.456: "123.456", -2e-300: "-2e-300"} {
		if got := formatDouble(in); got != want {
			t.Errorf("formatDouble(%v) = %s, want %s", in, got, want)
		}
	}
}

var fuzzTools []Tool

// FuzzParser: any text, in any format, cut anywhere, parses without a
// panic and its deltas add up to the parser's calls.
func FuzzParser(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.text, uint8(0), uint64(1))
	}
	f.Add("<think>a</think><tool_call>{\"name\":\"x\",\"arguments\":{\"a\":[1,{\"b\":\"\\ud800\"}]}}", uint8(3), uint64(7))
	f.Add("a<tool_call>\n<function=write_file>\n<parameter=opts>\n{\"a\": 1}\n</parameter>\n<parameter=path>\nx</parameter></function>\n</tool_call>",
		uint8(6), uint64(9))
	var err error
	if fuzzTools, err = ParseTools([]byte(xmlTools)); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, which uint8, seed uint64) {
		if !utf8.ValidString(text) {
			return
		}
		o := ParseOptions{Format: Formats[int(which)%len(Formats)], Calls: which&8 == 0}
		if which&16 != 0 {
			o.Reasoning, o.ReasoningOpen = &Think, which&32 != 0
		}
		o.KeepReasoning = which&64 != 0
		if o.Format == Qwen3Coder {
			o.Tools = fuzzTools
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		var cuts []int
		for i := range text {
			if i > 0 && rng.IntN(3) == 0 {
				cuts = append(cuts, i)
			}
		}
		content, reasoning, calls := parseAll(t, o, text, cuts)
		if !o.Calls && len(calls) > 0 {
			t.Fatalf("calls %v without Calls", calls)
		}
		if len(content)+len(reasoning) > len(text)+len(calls)*2+16 {
			t.Fatalf("more text out (%d) than in (%d)", len(content)+len(reasoning), len(text))
		}
	})
}

// TestLeadingWhitespaceIsNotHeldForever: with thinking off (the prompt
// closed the block) whitespace streams out as it comes; with a block that
// may open, at most maxLeadSpace bytes are held, and a block opened after
// a newline or two is still read. 200 newlines used to arrive in one chunk
// at the end.
func TestLeadingWhitespaceIsNotHeldForever(t *testing.T) {
	closed := NewParser(ParseOptions{Format: Hermes, Reasoning: &Think, ReasoningClosed: true})
	if d := closed.Push("\n"); d.Content != "\n" {
		t.Errorf("thinking off: a newline gave %q", d.Content)
	}
	open := NewParser(ParseOptions{Format: Hermes, Reasoning: &Think})
	var out strings.Builder
	for range 200 {
		out.WriteString(open.Push("\n").Content)
	}
	if got := out.Len(); got < 200-maxLeadSpace-1 {
		t.Errorf("a block that may open: %d of 200 newlines out before the end", got)
	}
	p := NewParser(ParseOptions{Format: Hermes, Reasoning: &Think})
	var d Delta
	for _, piece := range []string{"\n", "\n<th", "ink>hm</think>hi"} {
		x := p.Push(piece)
		d.Content, d.Reasoning = d.Content+x.Content, d.Reasoning+x.Reasoning
	}
	if d.Reasoning != "hm" || d.Content != "hi" {
		t.Errorf("a block after two newlines: reasoning %q content %q", d.Reasoning, d.Content)
	}
}
