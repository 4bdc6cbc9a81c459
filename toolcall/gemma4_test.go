package toolcall

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// TestGemma4Parse reads Gemma 4's calls as its template writes them, cut
// at every byte and at random: values turned into JSON, strings holding
// what looks like the syntax, reasoning in its channel, calls cut short
// closed as valid JSON, what is no call given back as text.
func TestGemma4Parse(t *testing.T) {
	tools := mustTools(t, xmlTools)
	off := ParseOptions{Format: Gemma4, Calls: true, Tools: tools, Reasoning: &Gemma4Thought, ReasoningClosed: true}
	on := ParseOptions{Format: Gemma4, Calls: true, Tools: tools, Reasoning: &Gemma4Thought}
	call := func(name, args string) string { return "<|tool_call>call:" + name + "{" + args + "}<tool_call|>" }
	checkParses(t, rand.New(rand.NewPCG(7, 8)), []parseCase{
		{"one call", off, call("get_weather", `city:<|"|>San Francisco<|"|>,days:3`),
			"", "", []Call{{"id1", "get_weather", `{"city":"San Francisco","days":3}`}}},
		{"content first, two calls", off, "I will check.\n" + call("get_weather", `city:<|"|>Oslo<|"|>,unit:<|"|>c<|"|>`) + call("now", ""),
			"I will check.\n", "", []Call{{"id1", "get_weather", `{"city":"Oslo","unit":"c"}`}, {"id2", "now", `{}`}}},
		{"nested values", off, call("write_file", `any:true,content:<|"|>line 1`+"\n\n"+`  line \3 "q"<|"|>,lines:[1,2],opts:{mode:420,x:[1.5e3,null,<|"|>s<|"|>]},path:<|"|>/tmp/a.txt<|"|>,size:-12.5`),
			"", "", []Call{{"id1", "write_file", `{"any":true,"content":"line 1\n\n  line \\3 \"q\"","lines":[1,2],"opts":{"mode":420,"x":[1.5e3,null,"s"]},"path":"/tmp/a.txt","size":-12.5}`}}},
		{"spaces between", off, "<|tool_call>call:write_file{ path: <|\"|>p<|\"|> , content:<|\"|><|\"|>, opts:{ }, lines:[ ] }<tool_call|>",
			"", "", []Call{{"id1", "write_file", `{"path":"p","content":"","opts":{},"lines":[]}`}}},
		{"a string holding the syntax", off, call("write_file", `content:<|"|>a <| b {x:1} <|"| c <tool_call|> ,}<|"|>`),
			"", "", []Call{{"id1", "write_file", `{"content":"a <| b {x:1} <|\"| c <tool_call|> ,}"}`}}},
		{"thinking", on, "<|channel>thought\nThe user wants the weather.<channel|>" + call("get_weather", `city:<|"|>Rome<|"|>`),
			"", "The user wants the weather.", []Call{{"id1", "get_weather", `{"city":"Rome"}`}}},
		{"thought then text", on, "<|channel>thought\nhm\n<channel|>It is 4.", "It is 4.", "hm", nil},
		{"no call", off, "The <|tool_call> mark opens a call; call: too.", "The <|tool_call> mark opens a call; call: too.", "", nil},
		{"unknown tool is text", off, call("other", `x:1`) + " ok", call("other", `x:1`) + " ok", "", nil},
		{"bad literal ends the call", off, call("get_weather", `city:Oslo`), "Oslo}<tool_call|>", "", []Call{{"id1", "get_weather", `{"city":null}`}}},
		{"cut short in a string", off, `<|tool_call>call:write_file{path:<|"|>ab` + "\u00e9", "", "", []Call{{"id1", "write_file", `{"path":"ab` + "\u00e9" + `"}`}}},
		{"cut short after a key", off, `<|tool_call>call:write_file{opts:{a:[1,`, "", "", []Call{{"id1", "write_file", `{"opts":{"a":[1]}}`}}},
		{"cut short after a comma", off, `<|tool_call>call:write_file{path:<|"|>a<|"|>,`, "", "", []Call{{"id1", "write_file", `{"path":"a"}`}}},
		{"cut short in the name", off, `Sure. <|tool_call>call:get_wea`, `Sure. <|tool_call>call:get_wea`, "", nil},
		{"missing <tool_call|>", off, `<|tool_call>call:now{}<|tool_call>call:now{}<tool_call|>`, "", "", []Call{{"id1", "now", `{}`}, {"id2", "now", `{}`}}},
		{"text after the calls", off, call("now", "") + "\nDone.", "Done.", "", []Call{{"id1", "now", `{}`}}},
		{"unicode", off, call("get_weather", `city:<|"|>Zürich 東京 🌧<|"|>`), "", "", []Call{{"id1", "get_weather", `{"city":"Zürich 東京 🌧"}`}}},
	})
}

// TestGemma4Grammar: the grammar takes calls as Gemma 4's template writes
// them (keys sorted, or in any order) and refuses what breaks the tools'
// schemas or Gemma's syntax.
func TestGemma4Grammar(t *testing.T) {
	tools := mustTools(t, xmlTools[:len(xmlTools)-1]+`, {"type": "function", "function": {"name": "book", "parameters": {"type": "object",
		"properties": {"guest": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}, "vip": {"type": ["boolean", "null"]}},
		"required": ["name"]}, "nights": {"type": "array", "items": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 9}, {"const": "all"}]},
		"minItems": 1, "maxItems": 2}, "odd key.x": {"enum": [1, "two", null]}}, "required": ["guest", "nights"]}}}]`)
	accepts := func(gbnf, text string) bool { return grammarAccepts(t, gbnf, text) }
	call := func(name, args string) string { return "<|tool_call>call:" + name + "{" + args + "}<tool_call|>" }
	req, err := Build(context.Background(), Gemma4, tools, Choice{Mode: Required}, Options{Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat(`text with <| and <|"| and "quotes" {}`, 60)
	for text, want := range map[string]bool{
		call("get_weather", `city:<|"|>Oslo<|"|>`):                                             true,
		call("get_weather", `city:<|"|>Oslo<|"|>,days:3,unit:<|"|>c<|"|>`):                     true,
		call("get_weather", `unit:<|"|>f<|"|>,days:3,city:<|"|>Oslo<|"|>`):                     true, // any order
		call("get_weather", `city:<|"|>`+long+`<|"|>`):                                         true,
		call("get_weather", `city:<|"|>a<|"|>`) + call("now", ""):                              true,
		call("write_file", `any:{k:[1,<|"|>x<|"|>]},content:<|"|><|"|>,path:<|"|>p<|"|>`):      true,
		call("write_file", `content:<|"|>c<|"|>,path:<|"|>p<|"|>,size:12.5`):                   true,
		call("get_weather", `days:3`):                                                          false, // city is required
		call("get_weather", `city:<|"|>Oslo<|"|>,days:three`):                                  false,
		call("get_weather", `city:<|"|>Oslo<|"|>,days:3.5`):                                    false, // an integer
		call("get_weather", `city:<|"|>Oslo<|"|>,unit:<|"|>k<|"|>`):                            false, // the enum
		call("get_weather", `city:<|"|>a<|"|>b<|"|>`):                                          false,
		call("get_weather", `city:<|"|>a<|"|>,city:<|"|>b<|"|>`):                               false, // a key twice
		call("get_weather", `city:<|"|>Oslo<|"|>,country:<|"|>NO<|"|>`):                        false,
		call("get_weather", `city:"Oslo"`):                                                     false,
		call("other", `x:1`):                                                                   false,
		"I will call.\n" + call("now", ""):                                                     false,
		call("write_file", `content:<|"|>c<|"|>,lines:[1,<|"|>x<|"|>],path:<|"|>p<|"|>`):       false, // integers
		call("book", `guest:{name:<|"|>Ana<|"|>},nights:[2]`):                                  true,
		call("book", `nights:[2,<|"|>all<|"|>],guest:{vip:null,name:<|"|>Ana<|"|>}`):           true,
		call("book", `guest:{name:<|"|>Ana<|"|>,vip:true},nights:[1],odd key.x:<|"|>two<|"|>`): true,
		call("book", `guest:{name:<|"|>Anabela<|"|>},nights:[2]`):                              false, // maxLength
		call("book", `guest:{vip:true},nights:[2]`):                                            false, // name required
		call("book", `guest:{name:<|"|>Ana<|"|>},nights:[]`):                                   false, // minItems
		call("book", `guest:{name:<|"|>Ana<|"|>},nights:[1,2,3]`):                              false, // maxItems
		call("book", `guest:{name:<|"|>Ana<|"|>},nights:[0]`):                                  false, // minimum
		call("book", `guest:{name:<|"|>Ana<|"|>},nights:[1],odd key.x:3`):                      false, // the enum
	} {
		if got := accepts(req.GBNF, text); got != want {
			t.Errorf("required grammar on %.80q: %v, want %v", text, got, want)
		}
	}
	auto, err := Build(context.Background(), Gemma4, tools, Choice{Mode: Auto}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !auto.Lazy || fmt.Sprint(auto.Triggers) != "[<|tool_call>]" || len(auto.Preserve) != 3 {
		t.Fatalf("auto: lazy %v triggers %q preserve %q", auto.Lazy, auto.Triggers, auto.Preserve)
	}
	if accepts(auto.GBNF, call("now", "")+call("now", "")) {
		t.Error("two calls without parallel_tool_calls")
	}
	named, err := Build(context.Background(), Gemma4, tools, Choice{Mode: Named, Name: "now"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !accepts(named.GBNF, call("now", "")) || accepts(named.GBNF, call("get_weather", `city:<|"|>x<|"|>`)) {
		t.Error("named: want now only")
	}
}

// TestDetectGemma4: Gemma 4's template (llama.cpp's copy) speaks Gemma4,
// with its thought channel as the reasoning tags.
func TestDetectGemma4(t *testing.T) {
	src, err := os.ReadFile("../chat/testdata/gemma4/gemma-4-31B-it.jinja")
	if err != nil {
		t.Fatal(err)
	}
	if f := Detect(string(src)); f != Gemma4 {
		t.Fatalf("Detect: %s, want gemma4", f)
	}
	if r := DetectReasoning(string(src)); r == nil || *r != Gemma4Thought {
		t.Fatalf("DetectReasoning: %v", r)
	}
	if !ClosesReasoning("<|turn>model\n<|channel>thought\n<channel|>", &Gemma4Thought) {
		t.Error("thinking off: the prompt closes the thought")
	}
}
