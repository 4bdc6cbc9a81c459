package chat

import (
	"strings"

	"github.com/ardanlabs/jinja"
)

// caps are what a template does with tools, found by rendering probe
// conversations (as llama.cpp's minja finds a template's capabilities), so
// that what it cannot render is written in a way it can.
type caps struct {
	systemRole      bool   // renders a system message
	tools           bool   // renders the tools
	toolCalls       bool   // renders an assistant's tool calls
	objectArguments bool   // renders call arguments only as an object, not as JSON text
	toolResponses   bool   // renders a tool message
	parallelCalls   bool   // renders two calls in one message
	example         string // how it writes a tool call, for templates that do not render tools
}

const (
	userNeedle = "<User Needle>"
	sysNeedle  = "<System Needle>"
)

// probeRender renders a probe conversation (JSON) and returns the text, or
// "" where the template raises.
func (t *compiled) probeRender(msgs, tools string, agp bool, in Input, c *caps) string {
	m, err := parseJSON([]byte(msgs))
	if err != nil {
		return ""
	}
	tv := jinja.None()
	if tools != "" {
		tv, _ = parseJSON([]byte(tools))
	}
	if c != nil {
		if m, err = polyfill(m, tv, c, Input{Polyfill: true}); err != nil {
			return ""
		}
	}
	out, err := t.render(m, tv, Input{AddGenerationPrompt: agp, BOS: in.BOS, EOS: in.EOS, Now: in.Now}, nil)
	if err != nil {
		return ""
	}
	return out
}

// toolCaps probes the template once per BOS and EOS text.
func (t *compiled) toolCaps(in Input) *caps {
	key := in.BOS + "\x00" + in.EOS
	if t.capsKey == key && t.caps != nil {
		return t.caps
	}
	user := `{"role": "user", "content": "` + userNeedle + `"}`
	sys := `{"role": "system", "content": "` + sysNeedle + `"}`
	if t.typedContent {
		user = `{"role": "user", "content": [{"type": "text", "text": "` + userNeedle + `"}]}`
		sys = `{"role": "system", "content": [{"type": "text", "text": "` + sysNeedle + `"}]}`
	}
	c := &caps{}
	c.systemRole = strings.Contains(t.probeRender("["+sys+", "+user+"]", "", false, in, nil), sysNeedle)
	c.tools = strings.Contains(t.probeRender("["+user+"]", `[{"name": "some_tool", "type": "function", "function": {"name": "some_tool", "description": "Some tool.", `+
		`"parameters": {"type": "object", "properties": {"arg": {"type": "string", "description": "Some argument."}}, "required": ["arg"]}}}]`,
		false, in, nil), "some_tool")
	call := func(name, args string) string {
		return `{"id": "call_1___", "type": "function", "function": {"arguments": ` + args + `, "name": "` + name + `"}}`
	}
	callsMsg := func(calls ...string) string {
		return `{"role": "assistant", "content": null, "tool_calls": [` + strings.Join(calls, ", ") + `]}`
	}
	argsObj := `{"argument_needle": "print('Hello, World!')"}`
	argsStr := `"{\"argument_needle\":\"print('Hello, World!')\"}"`
	// The argument's name as the template writes it, but not inside a
	// string that holds JSON text (Qwen 2.5's tojson of the text):
	// "argument_needle": as JSON or Python writes it, or Qwen3-Coder's
	// <parameter=argument_needle> (Qwen3.5 iterates the arguments' items,
	// which JSON text has not).
	rendersArgs := func(out string) bool {
		for rest := out; ; {
			i := strings.Index(rest, "argument_needle")
			if i < 0 {
				return false
			}
			if !strings.HasSuffix(rest[:i], `\"`) {
				return true
			}
			rest = rest[i+1:]
		}
	}
	str := rendersArgs(t.probeRender("["+user+", "+callsMsg(call("ipython", argsStr))+"]", "", false, in, nil))
	objOut := t.probeRender("["+user+", "+callsMsg(call("ipython", argsObj))+"]", "", false, in, nil)
	obj := rendersArgs(objOut)
	c.toolCalls = str || obj
	// A template that writes an object's items itself (Gemma 4's
	// argument_needle:<|"|>...<|"|>) prints JSON text as it is, inside its
	// own syntax: it gets objects even though the text shows.
	c.objectArguments = obj && (!str || writesItems(objOut))
	if c.toolCalls {
		args := argsStr
		if c.objectArguments {
			args = argsObj
		}
		out := t.probeRender("["+user+", "+callsMsg(call("test_tool1", args), call("test_tool2", args))+"]", "", false, in, nil)
		c.parallelCalls = strings.Contains(out, "test_tool1") && strings.Contains(out, "test_tool2")
		out = t.probeRender("["+user+", "+callsMsg(call("test_tool1", args))+
			`, {"role": "tool", "name": "test_tool1", "content": "Some response!", "tool_call_id": "call_911_"}]`, "", false, in, nil)
		c.toolResponses = strings.Contains(out, "Some response!")
	}
	if !c.tools {
		c.example = t.callExample(in, c)
	}
	t.caps, t.capsKey = c, key
	return c
}

// callExample is how the template writes a tool call: the difference
// between a conversation with one and the same without (llama.cpp shows
// it to a model whose template does not render tools).
func (t *compiled) callExample(in Input, c *caps) string {
	user := `{"role": "user", "content": "Hey"}`
	args := `"{\"arg1\":\"some_value\"}"`
	if c.objectArguments {
		args = `{"arg1": "some_value"}`
	}
	msg := `{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1___", "type": "function", "function": {"name": "tool_name", "arguments": ` + args + `}}]}`
	prefix := t.probeRender("["+user+"]", "", true, in, c)
	full := t.probeRender("["+user+", "+msg+"]", "", false, in, c)
	if eos := in.EOS; eos != "" {
		last := strings.LastIndex(full, eos)
		if last >= 0 && (last == len(prefix)-len(eos) || strings.HasSuffix(full, "\n") && last == len(full)-len(eos)-1) {
			full = full[:last]
		}
	}
	common := 0
	for i := 0; i < len(prefix) && i < len(full) && prefix[i] == full[i]; i++ {
		if prefix[i] != '<' { // a tag both begin alike (DeepSeek R1's <think>) is not common
			common = i + 1
		}
	}
	ex := full[common:]
	if !strings.Contains(ex, "tool_name") && !strings.Contains(ex, "some_value") {
		return ""
	}
	return ex
}

// writesItems reports whether out names the probe's argument as a bare
// key (followed by neither quote nor escape): its own syntax, not JSON's
// or Python's.
func writesItems(out string) bool {
	for rest := out; ; {
		i := strings.Index(rest, "argument_needle")
		if i < 0 {
			return false
		}
		rest = rest[i+len("argument_needle"):]
		if rest != "" && !strings.ContainsRune("\"'\\", rune(rest[0])) {
			return true
		}
	}
}
