package chat

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"

	"github.com/batchd/batchd/jsontext"
)

// polyfill rewrites a conversation with tools so that the template can
// render it, as llama.cpp's minja does: tools it does not render are
// described in the system message, calls and results it does not render
// become JSON text, arguments it renders only as objects are parsed, a
// system message it refuses joins the first user message. Beyond
// llama.cpp, a turn with several calls for a template that renders one
// becomes one turn per call, each followed by its result.
func polyfill(msgs, tools jinja.Value, c *caps, in Input) (jinja.Value, error) {
	list := msgs.AsList().Items
	hasTools := tools.IsList() && len(tools.AsList().Items) > 0
	hasCalls, hasResults := history(list)
	fillSystem := in.Polyfill && !c.systemRole
	fillTools := in.Polyfill && hasTools && !c.tools
	fillCalls := in.Polyfill && hasCalls && !c.toolCalls
	fillResults := in.Polyfill && hasResults && !c.toolResponses
	objectArgs := hasCalls && (c.objectArguments || fillCalls)

	out := append([]jinja.Value(nil), list...)
	if in.System != "" {
		out = addSystem(out, in.System)
	}
	if fillTools {
		note := "You can call any of the following tools to satisfy the user's requests: " + dump(tools, 2)
		if c.example != "" {
			note += "\n\nExample tool call syntax:\n\n" + c.example + "\n\n"
		}
		out = addSystem(out, note)
	}
	if in.ToolsInSystem && hasTools {
		out = toolsInSystem(out, tools)
	}
	if hasCalls && c.toolCalls && !c.parallelCalls {
		out = oneCallPerTurn(out)
	}
	tw := turns{mergeSystem: fillSystem}
	for _, m := range out {
		d := copyDict(m.AsDict())
		r := role(m)
		if calls, ok := d.Get("tool_calls"); ok && calls.IsList() {
			if objectArgs {
				parseArguments(calls)
			}
			if fillCalls {
				d = callsAsContent(d, calls)
			}
		}
		result := fillResults && r == "tool"
		if result {
			d = resultAsContent(d)
			r = "user"
		}
		tw.add(d, r, result)
	}
	return jinja.NewList(tw.end()), nil
}

// turns collects the rewritten conversation. A template that refuses a
// system role gets the system text at the start of the next user turn;
// a result written as a user turn joins the user turn next to it, so that
// roles still alternate (Gemma's template demands it).
type turns struct {
	mergeSystem bool
	res         []jinja.Value
	pending     string // system text not yet placed
	lastResult  bool   // the last turn holds a polyfilled result
}

func (tw *turns) add(d *jinja.Dict, r string, result bool) {
	content, ok := d.Get("content")
	text := ok && content.IsString()
	if tw.mergeSystem && text {
		switch r {
		case "system":
			tw.pending = joinText(tw.pending, content.AsString())
			return
		case "user":
			if tw.pending != "" {
				d.Set("content", jinja.NewString(joinText(tw.pending, content.AsString())))
				tw.pending = ""
			}
		default:
			tw.flush()
		}
	}
	if r == "user" && text && (result || tw.lastResult) && len(tw.res) > 0 && role(tw.res[len(tw.res)-1]) == "user" {
		prev := tw.res[len(tw.res)-1].AsDict()
		if pc, ok := prev.Get("content"); ok && pc.IsString() {
			merged := copyDict(prev)
			merged.Set("content", jinja.NewString(joinText(pc.AsString(), content.AsString())))
			tw.res[len(tw.res)-1] = dictValue(merged)
			tw.lastResult = result
			return
		}
	}
	tw.res = append(tw.res, dictValue(d))
	tw.lastResult = result
}

func (tw *turns) flush() {
	if tw.pending != "" {
		tw.res = append(tw.res, userMessage(tw.pending))
		tw.pending = ""
		tw.lastResult = false
	}
}

func (tw *turns) end() []jinja.Value {
	tw.flush()
	return tw.res
}

// joinText joins two texts with a newline, either may be empty.
func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// history says whether the conversation holds tool calls and tool results.
func history(list []jinja.Value) (hasCalls, hasResults bool) {
	for _, m := range list {
		if v, ok := m.AsDict().Get("tool_calls"); ok && v.IsList() && len(v.AsList().Items) > 0 {
			hasCalls = true
		}
		if role(m) == "tool" {
			hasResults = true
		}
	}
	return hasCalls, hasResults
}

func role(m jinja.Value) string {
	if r, ok := m.AsDict().Get("role"); ok && r.IsString() {
		return r.AsString()
	}
	return ""
}

func userMessage(text string) jinja.Value {
	d := jinja.NewDict()
	d.AsDict().Set("role", jinja.NewString("user"))
	d.AsDict().Set("content", jinja.NewString(text))
	return d
}

func dictValue(d *jinja.Dict) jinja.Value {
	v := jinja.NewDict()
	for _, k := range d.Keys {
		val, _ := d.Get(k)
		v.AsDict().Set(k, val)
	}
	return v
}

// copyDict copies d, less the keys drop.
func copyDict(d *jinja.Dict, drop ...string) *jinja.Dict {
	out := jinja.NewDict().AsDict()
	for _, k := range d.Keys {
		skip := false
		for _, x := range drop {
			skip = skip || x == k
		}
		if !skip {
			v, _ := d.Get(k)
			out.Set(k, v)
		}
	}
	return out
}

// addSystem appends text to the system message, or starts one.
func addSystem(msgs []jinja.Value, text string) []jinja.Value {
	if len(msgs) > 0 && role(msgs[0]) == "system" {
		d := copyDict(msgs[0].AsDict())
		old, _ := d.Get("content")
		prev := ""
		if old.IsString() {
			prev = old.AsString()
		}
		d.Set("content", jinja.NewString(prev+"\n\n"+text))
		return append([]jinja.Value{dictValue(d)}, msgs[1:]...)
	}
	sys := jinja.NewDict()
	sys.AsDict().Set("role", jinja.NewString("system"))
	sys.AsDict().Set("content", jinja.NewString(text))
	return append([]jinja.Value{sys}, msgs...)
}

// toolsInSystem gives the system message a "tools" string, the functions
// as JSON (Phi-4-mini's template reads them there).
func toolsInSystem(msgs []jinja.Value, tools jinja.Value) []jinja.Value {
	var fns []jinja.Value
	for _, t := range tools.AsList().Items {
		if t.IsDict() {
			if f, ok := t.AsDict().Get("function"); ok {
				fns = append(fns, f)
			}
		}
	}
	if len(msgs) == 0 || role(msgs[0]) != "system" {
		msgs = addSystem(msgs, "")
		d := copyDict(msgs[0].AsDict())
		d.Set("content", jinja.NewString(""))
		msgs[0] = dictValue(d)
	}
	d := copyDict(msgs[0].AsDict())
	d.Set("tools", jinja.NewString(dump(jinja.NewList(fns), -1)))
	msgs[0] = dictValue(d)
	return msgs
}

// parseArguments turns arguments given as JSON text into objects.
func parseArguments(calls jinja.Value) {
	for _, c := range calls.AsList().Items {
		if !c.IsDict() {
			continue
		}
		fn, ok := c.AsDict().Get("function")
		if !ok || !fn.IsDict() {
			continue
		}
		if args, ok := fn.AsDict().Get("arguments"); ok && args.IsString() {
			if v, err := parseJSON([]byte(args.AsString())); err == nil {
				fn.AsDict().Set("arguments", v)
			}
		}
	}
}

// callsAsContent writes an assistant's calls into its content as JSON.
func callsAsContent(d *jinja.Dict, calls jinja.Value) *jinja.Dict {
	list := jinja.NewList(nil)
	for _, c := range calls.AsList().Items {
		if !c.IsDict() {
			continue
		}
		cd := c.AsDict()
		if typ, ok := cd.Get("type"); ok && typ.IsString() && typ.AsString() != "function" {
			continue
		}
		fn, _ := cd.Get("function")
		tc := jinja.NewDict()
		if fn.IsDict() {
			name, _ := fn.AsDict().Get("name")
			args, _ := fn.AsDict().Get("arguments")
			tc.AsDict().Set("name", name)
			tc.AsDict().Set("arguments", args)
		}
		if id, ok := cd.Get("id"); ok {
			tc.AsDict().Set("id", id)
		}
		list.AsList().Append(tc)
	}
	obj := jinja.NewDict()
	obj.AsDict().Set("tool_calls", list)
	if content, ok := d.Get("content"); ok && !content.IsNone() && !(content.IsString() && content.AsString() == "") {
		obj.AsDict().Set("content", content)
	}
	out := copyDict(d, "tool_calls")
	out.Set("content", jinja.NewString(dump(obj, 2)))
	return out
}

// resultAsContent writes a tool message as a user one.
func resultAsContent(d *jinja.Dict) *jinja.Dict {
	resp := jinja.NewDict()
	content, _ := d.Get("content")
	resp.AsDict().Set("content", content)
	if name, ok := d.Get("name"); ok {
		resp.AsDict().Set("name", name)
	}
	if id, ok := d.Get("tool_call_id"); ok {
		resp.AsDict().Set("tool_call_id", id)
	}
	obj := jinja.NewDict()
	obj.AsDict().Set("tool_response", resp)
	out := copyDict(d, "name")
	out.Set("role", jinja.NewString("user"))
	out.Set("content", jinja.NewString(dump(obj, 2)))
	return out
}

// oneCallPerTurn splits an assistant turn with several calls into one
// turn per call, each followed by the tool message that answers it (by
// tool_call_id, else in order), for templates that render one call a turn.
func oneCallPerTurn(msgs []jinja.Value) []jinja.Value {
	var out []jinja.Value
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		calls, ok := m.AsDict().Get("tool_calls")
		if role(m) != "assistant" || !ok || !calls.IsList() || len(calls.AsList().Items) < 2 {
			out = append(out, m)
			continue
		}
		j := i + 1
		for j < len(msgs) && role(msgs[j]) == "tool" {
			j++
		}
		results := append([]jinja.Value(nil), msgs[i+1:j]...)
		for k, c := range calls.AsList().Items {
			d := copyDict(m.AsDict())
			d.Set("tool_calls", jinja.NewList([]jinja.Value{c}))
			if k > 0 {
				d.Set("content", jinja.NewString(""))
			}
			out = append(out, dictValue(d))
			if r := takeResult(&results, c, k == len(calls.AsList().Items)-1); len(r) > 0 {
				out = append(out, r...)
			}
		}
		out = append(out, results...)
		i = j - 1
	}
	return out
}

// takeResult removes the results that answer call c (the next one when
// none names it; all that are left after the last call).
func takeResult(results *[]jinja.Value, c jinja.Value, last bool) []jinja.Value {
	rs := *results
	if last {
		*results = nil
		return rs
	}
	id := ""
	if c.IsDict() {
		if v, ok := c.AsDict().Get("id"); ok && v.IsString() {
			id = v.AsString()
		}
	}
	for i, r := range rs {
		if v, ok := r.AsDict().Get("tool_call_id"); ok && v.IsString() && id != "" && v.AsString() == id {
			*results = append(rs[:i:i], rs[i+1:]...)
			return []jinja.Value{r}
		}
	}
	if len(rs) == 0 {
		return nil
	}
	*results = rs[1:]
	return rs[:1]
}

// dump writes v as JSON as nlohmann's dump(indent) does (llama.cpp's
// polyfills): indent < 0 is compact, non-ASCII characters as they are.
func dump(v jinja.Value, indent int) string {
	var b strings.Builder
	writeJSON(&b, v, indent, 0)
	return b.String()
}

func writeJSON(b *strings.Builder, v jinja.Value, indent, level int) {
	nl := func(l int) {
		if indent >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", indent*l))
		}
	}
	colon := ":"
	if indent >= 0 {
		colon = ": "
	}
	switch {
	case v.IsNone() || v.IsUndefined():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		f := v.AsFloat()
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !math.IsInf(f, 0) && !math.IsNaN(f) && !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		b.WriteString(s)
	case v.IsString():
		jsontext.WriteString(b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, x := range items {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(level + 1)
			writeJSON(b, x, indent, level+1)
		}
		nl(level)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(level + 1)
			jsontext.WriteString(b, k)
			b.WriteString(colon)
			x, _ := d.Get(k)
			writeJSON(b, x, indent, level+1)
		}
		nl(level)
		b.WriteByte('}')
	default:
		jsontext.WriteString(b, fmt.Sprint(v))
	}
}
