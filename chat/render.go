package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// compiled is a template compiled inside a worker process (worker.go):
// only the worker runs the Jinja engine on a model's template.
type compiled struct {
	name string
	t    *jinja.Template
	// typedContent: the template prints content given as a list of parts
	// but not content given as a string, so parts are passed as they are.
	typedContent bool
	// thinking: the template reads an assistant's reasoning from
	// "thinking" (gpt-oss) and not from "reasoning_content".
	thinking bool
	// caps: what the template does with tools, probed at the first
	// render that needs them, for the BOS and EOS texts in capsKey.
	caps    *caps
	capsKey string
}

func compile(name, src string) (t *compiled, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &TemplateError{Name: name, Compile: true, Problem: fmt.Sprint(r)}
		}
	}()
	jt, err := jinja.Compile(src)
	if err != nil {
		return nil, &TemplateError{Name: name, Compile: true, Problem: err.Error()}
	}
	thinking := (strings.Contains(src, ".thinking") || strings.Contains(src, `"thinking" in`)) && !strings.Contains(src, "reasoning_content")
	return &compiled{name: name, t: jt, thinking: thinking}, nil
}

const probeText = "batchd-probe-7f3a"

// probe renders one user message, as a string or as a text part, and
// returns the sentinel if it shows in the output.
func (t *compiled) probe(typed bool) string {
	content := `"` + probeText + `"`
	if typed {
		content = `[{"type": "text", "text": "` + probeText + `"}]`
	}
	msgs, _ := parseJSON([]byte(`[{"role": "user", "content": ` + content + `}]`))
	out, err := t.render(msgs, jinja.None(), Input{AddGenerationPrompt: true}, nil)
	if err != nil || !strings.Contains(out, probeText) {
		return ""
	}
	return probeText
}

// renderInput renders a conversation: ErrInvalidMessages (wrapped) for a
// malformed one, *TemplateError when the template raises.
func (t *compiled) renderInput(in Input) (string, error) {
	sh := newShield(in.TextOnly)
	msgs, err := conversation(in.Messages, t.typedContent, sh)
	if err != nil {
		return "", err
	}
	if t.thinking {
		msgs = thinkingFromReasoning(msgs)
	}
	tools := jinja.None()
	if len(in.Tools) > 0 && string(in.Tools) != "null" {
		if tools, err = parseShielded(in.Tools, sh); err != nil {
			return "", fmt.Errorf("%w: tools: %v", ErrInvalidMessages, err)
		}
		if !tools.IsList() {
			return "", fmt.Errorf("%w: tools: want an array", ErrInvalidMessages)
		}
	}
	vars, err := templateVars(in.Vars, sh)
	if err != nil {
		return "", err
	}
	if in.Polyfill || in.System != "" || hasToolCalls(msgs) {
		if msgs, err = polyfill(msgs, tools, t.toolCaps(in), in); err != nil {
			return "", err
		}
	}
	return t.render(msgs, tools, in, vars)
}

// reserved are the variables batchd sets; chat_template_kwargs may not.
var reserved = map[string]bool{"messages": true, "tools": true, "add_generation_prompt": true, "bos_token": true,
	"eos_token": true, "strftime_now": true, "range": true, "raise_exception": true}

// templateVars reads chat_template_kwargs: a JSON object of variables.
func templateVars(raw []byte, sh *shield) (map[string]jinja.Value, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	v, err := parseShielded(raw, sh)
	if err != nil || !v.IsDict() {
		return nil, fmt.Errorf("%w: chat_template_kwargs: want a JSON object", ErrInvalidMessages)
	}
	out := map[string]jinja.Value{}
	for _, k := range v.AsDict().Keys {
		if reserved[k] {
			return nil, fmt.Errorf("%w: chat_template_kwargs: %q is set by batchd", ErrInvalidMessages, k)
		}
		out[k], _ = v.AsDict().Get(k)
	}
	return out, nil
}

func hasToolCalls(msgs jinja.Value) bool {
	for _, m := range msgs.AsList().Items {
		if v, ok := m.AsDict().Get("tool_calls"); ok && v.IsList() && len(v.AsList().Items) > 0 {
			return true
		}
	}
	return false
}

func (t *compiled) render(msgs, tools jinja.Value, in Input, vars map[string]jinja.Value) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &TemplateError{Name: t.name, Problem: fmt.Sprintf("the renderer failed: %v", r)}
		}
	}()
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	data := map[string]jinja.Value{
		"messages":              msgs,
		"tools":                 tools,
		"add_generation_prompt": jinja.NewBool(in.AddGenerationPrompt),
		"bos_token":             jinja.NewString(in.BOS),
		"eos_token":             jinja.NewString(in.EOS),
		"strftime_now":          jinja.NewCallable("strftime_now", strftime(now)),
		"range":                 jinja.NewCallable("range", boundedRange),
	}
	for k, v := range vars {
		data[k] = v
	}
	out, err = t.t.RenderValues(data)
	if err != nil {
		return "", &TemplateError{Name: t.name, Problem: strings.TrimPrefix(err.Error(), "jinja: ")}
	}
	return out, nil
}

// maxRange bounds range(): no chat template needs more, and a hostile one
// must not allocate without limit.
const maxRange = 1 << 16

func boundedRange(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	var a [3]int64
	a[2] = 1
	for i, v := range args {
		if !v.IsInt() || len(args) > 3 {
			return jinja.Undefined(), errors.New("range: want 1 to 3 integers")
		}
		a[i] = v.AsInt()
	}
	start, stop, step := a[0], a[1], a[2]
	if len(args) == 1 {
		start, stop = 0, a[0]
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range: step must not be zero")
	}
	var items []jinja.Value
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(items) == maxRange {
			return jinja.Undefined(), fmt.Errorf("range: more than %d items", maxRange)
		}
		items = append(items, jinja.NewInt(i))
	}
	return jinja.NewList(items), nil
}

// strftime formats now with the C directives templates use; other text
// is copied as it is.
func strftime(now time.Time) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	layouts := map[byte]string{'Y': "2006", 'y': "06", 'm': "01", 'd': "02", 'b': "Jan", 'B': "January",
		'a': "Mon", 'A': "Monday", 'H': "15", 'I': "03", 'M': "04", 'S': "05", 'p': "PM", 'Z': "MST", 'z': "-0700"}
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now: want one format string")
		}
		f := args[0].AsString()
		var sb strings.Builder
		for i := 0; i < len(f); i++ {
			if f[i] != '%' || i+1 == len(f) {
				sb.WriteByte(f[i])
				continue
			}
			i++
			switch l, ok := layouts[f[i]]; {
			case ok:
				sb.WriteString(now.Format(l))
			case f[i] == 'j':
				fmt.Fprintf(&sb, "%03d", now.YearDay())
			case f[i] == '%':
				sb.WriteByte('%')
			default:
				sb.WriteString(f[i-1 : i+1])
			}
		}
		return jinja.NewString(sb.String()), nil
	}
}

// thinkingFromReasoning gives a template that reads "thinking" the
// reasoning a client sent as reasoning_content (OpenAI clients echo it so),
// as llama.cpp does for gpt-oss: a turn with calls then drops its content,
// the template taking one or the other as the call's analysis.
func thinkingFromReasoning(msgs jinja.Value) jinja.Value {
	list := msgs.AsList().Items
	var out []jinja.Value
	for i, m := range list {
		d := m.AsDict()
		r, ok := d.Get("reasoning_content")
		if !ok || !r.IsString() {
			continue
		}
		if out == nil {
			out = append([]jinja.Value(nil), list...)
		}
		drop := []string{"reasoning_content"}
		if c, ok := d.Get("tool_calls"); ok && c.IsList() && len(c.AsList().Items) > 0 {
			drop = append(drop, "content")
		}
		nd := copyDict(d, drop...)
		nd.Set("thinking", r)
		out[i] = dictValue(nd)
	}
	if out == nil {
		return msgs
	}
	return jinja.NewList(out)
}
