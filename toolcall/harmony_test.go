package toolcall

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/batchd/batchd/grammar"
)

// TestHarmonyParse reads gpt-oss answers as llama.cpp's parser does, and
// survives the model's habits: a recipient on the analysis channel, the
// recipient in the role header, no <|end|> before <|start|>, a stray
// commentary channel, built-in tools. Every way of streaming a text gives
// the same message.
func TestHarmonyParse(t *testing.T) {
	const weather = `{"city": "Paris"}`
	cases := []struct {
		name, text                  string
		calls, keep                 bool
		content, reasoning, callStr string
	}{
		{name: "analysis then final", text: "<|channel|>analysis<|message|>The user greets. Reply.<|end|><|start|>assistant<|channel|>final<|message|>Hello! 👋",
			content: "Hello! 👋", reasoning: "The user greets. Reply."},
		{name: "final only, ended by return", text: "<|channel|>final<|message|>Just this.<|return|>", content: "Just this."},
		{name: "call in the channel header", calls: true,
			text:      "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" + weather + "<|call|>",
			reasoning: "Need the weather.", callStr: "get_weather " + weather},
		{name: "call in the role header", calls: true, text: " to=functions.get_weather<|channel|>commentary json<|message|>" + weather,
			callStr: "get_weather " + weather},
		{name: "recipient on analysis", calls: true, text: "<|channel|>analysis to=functions.get_weather <|constrain|>json<|message|>" + weather,
			callStr: "get_weather " + weather},
		{name: "no end before start", text: "<|channel|>analysis<|message|>hmm<|start|>assistant<|channel|>final<|message|>ok",
			content: "ok", reasoning: "hmm"},
		{name: "preamble then call", calls: true,
			text:    "<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}<|call|>",
			content: "Let me check.", callStr: "now {}"},
		{name: "built-in tool dropped", calls: true,
			text:      "<|channel|>analysis<|message|>search<|end|><|start|>assistant<|channel|>commentary to=browser.search <|constrain|>json<|message|>{\"q\": 1}<|call|>",
			reasoning: "search"},
		{name: "call without tools dropped", text: "<|channel|>commentary to=functions.x<|message|>{}<|call|>"},
		{name: "stray commentary", text: "<|channel|>commentary to=assistant<|channel|>final<|message|>hi <b>x</b>", content: "hi <b>x</b>"},
		{name: "stray commentary before analysis", text: "<|channel|>commentary<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>b",
			content: "b", reasoning: "a"},
		{name: "not harmony", text: "plain < text |> here", content: "plain < text |> here"},
		{name: "cut in a header", text: "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|chan", reasoning: "x"},
		{name: "reasoning kept", keep: true, text: "<|channel|>analysis<|message|>T<|end|><|start|>assistant<|channel|>final<|message|>C",
			content: "<|channel|>analysis<|message|>T<|end|>C"},
		{name: "text like a marker", text: "<|channel|>final<|message|>a <|b and <|en d", content: "a <|b and <|en d"},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		for _, cuts := range cutsOf(c.text, rng) {
			content, reasoning, calls := parseAll(t, ParseOptions{Format: Harmony, Calls: c.calls, KeepReasoning: c.keep}, c.text, cuts)
			var cs []string
			for _, call := range calls {
				cs = append(cs, call.Name+" "+call.Arguments)
			}
			if content != c.content || reasoning != c.reasoning || strings.Join(cs, "|") != c.callStr {
				t.Fatalf("%s (cuts %v): content %q reasoning %q calls %q; want %q %q %q", c.name, cuts, content, reasoning, cs,
					c.content, c.reasoning, c.callStr)
			}
		}
	}
}

// TestHarmonyGrammars: the call grammar takes each form of a call and
// the messages before it, and nothing else; the answer grammar holds the
// JSON on the final channel.
func TestHarmonyGrammars(t *testing.T) {
	tools, err := ParseTools([]byte(`[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
		"properties": {"city": {"type": "string"}}, "required": ["city"]}}}, {"type": "function", "function": {"name": "now"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	accepts := func(gbnf, text string) bool { return grammarAccepts(t, gbnf, text) }
	req, err := Build(context.Background(), Harmony, tools, Choice{Mode: Required}, Options{Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	if req.Lazy || req.Parallel {
		t.Fatalf("required: lazy %v parallel %v", req.Lazy, req.Parallel)
	}
	for text, want := range map[string]bool{
		"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\"}":                                true,
		" to=functions.now<|channel|>commentary json<|message|>{}":                                                                       true,
		"<|channel|>analysis<|message|>Think <a> about it.<|end|><|start|>assistant to=functions.now<|channel|>analysis<|message|>{}":    true,
		"<|channel|>final<|message|>No call.":                                                                                            false,
		"<|channel|>commentary to=functions.get_weather<|message|>{}":                                                                    false,
		"<|channel|>commentary to=functions.other<|message|>{}":                                                                          false,
		"<|channel|>analysis<|message|>early <|end|> inside<|end|><|start|>assistant to=functions.now<|channel|>commentary<|message|>{}": false,
	} {
		if got := accepts(req.GBNF, text); got != want {
			t.Errorf("required grammar on %q: %v, want %v", text, got, want)
		}
	}
	auto, err := Build(context.Background(), Harmony, tools, Choice{Mode: Auto}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !auto.Lazy || len(auto.Triggers) != 1 || auto.Triggers[0] != " to=functions." {
		t.Fatalf("auto: lazy %v triggers %q", auto.Lazy, auto.Triggers)
	}
	for text, want := range map[string]bool{
		" to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Rome\"}": true,
		" to=functions.now<|channel|>commentary json<|message|>{}":                   true,
		" to=functions.now<|message|>{\"x\": 1}":                                     false,
	} {
		if got := accepts(auto.GBNF, text); got != want {
			t.Errorf("auto grammar on %q: %v, want %v", text, got, want)
		}
	}
	answer, err := HarmonyAnswer(context.Background(), []byte(`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]bool{
		"<|channel|>final<|message|>{\"n\": 3}": true,
		"<|channel|>analysis<|message|>Count.<|end|><|start|>assistant<|channel|>final <|constrain|>json<|message|>{\"n\": 3}": true,
		"<|channel|>final<|message|>{\"n\": \"3\"}": false,
		"{\"n\": 3}": false,
	} {
		if got := accepts(answer, text); got != want {
			t.Errorf("answer grammar on %q: %v, want %v", text, got, want)
		}
	}
}

// grammarAccepts reports whether the grammar takes text whole.
func grammarAccepts(t *testing.T, gbnf, text string) bool {
	t.Helper()
	g, err := grammar.Parse(gbnf)
	if err != nil {
		t.Fatalf("%v\n%s", err, gbnf)
	}
	m := g.NewMatcher()
	return m.Accept([]byte(text)) == nil && m.AllowsEnd()
}
