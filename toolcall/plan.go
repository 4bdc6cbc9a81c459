package toolcall

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/jsontext"
)

// Plan is how one request's tool calls are enforced and read.
type Plan struct {
	Format Format
	// GBNF is the grammar of a response with calls; "" when none is
	// enforced (tool_choice none, or no tools).
	GBNF string
	// Lazy: the output is free until one of Triggers appears in it; the
	// grammar then holds from the trigger's first byte (tool_choice auto).
	Lazy     bool
	Triggers []string
	// Preserve are marker texts the output must keep even where the
	// vocabulary has them as control tokens ([TOOL_CALLS], <|python_tag|>).
	Preserve []string
	// Stops are stop strings the format adds (Llama 3.x's <|eom_id|>).
	Stops []string
	// System is an instruction the conversation's system message gains
	// (the Generic format's "Respond in JSON format, ...").
	System string
	// Parallel: more than one call may come in one response.
	Parallel bool
	// Answer: GBNF also holds the response that calls nothing to the
	// request's schema (Options.Answer).
	Answer bool
	// EndsThought are texts that end a reasoning block and begin the
	// grammar (Qwen3-Coder's <tool_call>: Qwen3.5 may call before
	// </think>).
	EndsThought []string
}

// MaxTriggers is the most triggers a plan has: the engine's bound
// (engine.MaxGrammarTriggers), whatever the number of tools.
const MaxTriggers = 32

// Options shape Build.
type Options struct {
	// Parallel allows several calls in one response (parallel_tool_calls).
	Parallel bool
	// Answer is a JSON schema the response follows when it calls nothing
	// (response_format beside tools, as OpenAI's Agents SDK sends an
	// output type with its tools): the grammar is then calls or such an
	// answer, from the first token (never lazy). AnswerStrict is the
	// schema's strict.
	Answer       []byte
	AnswerStrict bool
	// Bare: the model's template has no reasoning, so Qwen3-Coder's first
	// call may leave out <tool_call> (and <function=NAME> triggers it).
	Bare bool
}

// PromptOptions are what a format needs of the rendered conversation: an
// instruction in the system message (Generic, when calls may come), the
// tools in the system message (Phi-4-mini's template reads them there),
// and template variables (Llama 3.x: the tools in the system message, as
// llama.cpp renders them). vars are JSON members, or "".
func PromptOptions(f Format, tools []Tool, c Choice) (system string, toolsInSystem bool, vars map[string]string) {
	if len(tools) == 0 {
		return "", false, nil
	}
	switch f {
	case Generic:
		if c.Mode != None {
			system = genericSystem
		}
	case Phi4:
		toolsInSystem = true
	case Llama3:
		vars = map[string]string{"tools_in_user_message": "false"}
	}
	return system, toolsInSystem, vars
}

// ParseFormat reads a configured format name; "" and "auto" are ok with f "".
func ParseFormat(name string) (Format, error) {
	if name == "" || name == "auto" {
		return "", nil
	}
	for _, f := range Formats {
		if string(f) == name {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("tool format %q: want auto or one of %s", name, strings.Join(names, ", "))
}

// genericSystem is llama.cpp's instruction for the Generic format.
const genericSystem = "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request"

// Build plans a request's calls in format f: the grammar llama.cpp's
// chat handler builds for the format (same rules and names), narrowed to
// one function for a named tool_choice, lazy for auto. Converting the
// tools' schemas is bounded as a schema's is and stops when ctx ends.
func Build(ctx context.Context, f Format, tools []Tool, c Choice, o Options) (Plan, error) {
	p := Plan{Format: f, Parallel: o.Parallel, Answer: o.Answer != nil}
	switch f {
	case Llama3:
		p.Stops = []string{eomID}
		p.Preserve = []string{pythonTag}
		// One call a turn: Llama 3.x's templates refuse two in a message.
		p.Parallel = false
	case MistralNemo:
		p.Preserve = []string{nemoOpen}
	case Phi4:
		p.Preserve = []string{phiOpen, phiClose}
	case DeepSeekR1:
		p.Preserve = []string{r1CallsOpen, r1CallsClose, r1CallOpen, r1CallClose, r1Sep}
	case Hermes, Qwen3Coder:
		p.Preserve = []string{hermesOpen, hermesClose}
	case Gemma4:
		p.Preserve = []string{gemmaOpen, gemmaClose, gemmaQuote}
	case Harmony:
		p.Preserve = harmonyPreserve
		// A call ends the turn (<|call|>): one a response.
		p.Parallel = false
	case Generic:
		p.System = genericSystem
	}
	if c.Mode == None || len(tools) == 0 {
		return p, nil
	}
	if c.Mode == Named {
		for _, t := range tools {
			if t.Name == c.Name {
				tools = []Tool{t}
				break
			}
		}
	}
	p.Lazy = c.Mode == Auto && f != Generic && o.Answer == nil
	b := grammar.NewBuilder(ctx, false)
	root := "root"
	if o.Answer != nil {
		root = "tool-calls"
	}
	if err := formatGrammar(b, f, root, tools, c, o.Bare, &p); err != nil {
		return Plan{}, err
	}
	if o.Answer != nil {
		if c.Mode == Auto {
			b.SetStrict(o.AnswerStrict)
			root += " | " + b.AddSchema("answer", o.Answer)
		}
		b.AddRule("root", root)
	}
	var err error
	if p.GBNF, err = b.GBNF(); err != nil {
		return Plan{}, invalid("%v", err)
	}
	if !p.Lazy {
		p.Triggers = nil
	}
	return p, nil
}

// formatGrammar adds f's grammar of calls to the tools as rule root, and
// the texts that open a call to p.Triggers.
func formatGrammar(b *grammar.Builder, f Format, root string, tools []Tool, c Choice, bare bool, p *Plan) error {
	var err error
	switch f {
	case Hermes:
		err = hermesGrammar(b, root, tools, p.Parallel)
		p.Triggers = []string{hermesOpen}
	case Llama3:
		err = llama3Grammar(b, root, tools)
		// {"name": "NAME" for each tool, as llama.cpp adds them, while
		// they fit the engine's bound: {"name": fires at the same byte.
		if len(tools)+6 <= MaxTriggers {
			for _, t := range tools {
				p.Triggers = append(p.Triggers, `{"name": "`+t.Name+`"`)
			}
		}
		p.Triggers = append(p.Triggers, `{"name":`, "{\n  \"name\":", "{\n    \"name\":",
			`{"type": "function"`, "{\n  \"type\": \"function\"", "{\n    \"type\": \"function\"")
	case MistralNemo:
		err = arrayGrammar(b, root, nemoOpen, "", tools, p.Parallel, true)
		p.Triggers = []string{nemoOpen}
	case Phi4:
		err = arrayGrammar(b, root, phiOpen, phiClose, tools, p.Parallel, false)
		p.Triggers = []string{phiOpen}
	case DeepSeekR1:
		err = r1Grammar(b, root, tools, p.Parallel)
		p.Triggers = []string{r1CallsOpen}
	case Harmony:
		err = harmonyGrammar(b, root, tools, p.Lazy)
		p.Triggers = []string{harmonyTrigger}
	case Qwen3Coder:
		err = xmlGrammar(b, root, tools, p.Parallel, bare)
		p.Triggers = []string{hermesOpen}
		p.EndsThought = []string{hermesOpen}
		switch {
		case bare && len(tools) < MaxTriggers:
			for _, t := range tools {
				p.Triggers = append(p.Triggers, xmlFunction+t.Name+">")
			}
		case bare: // past the engine's bound: any function's tag
			p.Triggers = append(p.Triggers, xmlFunction)
		}
	case Gemma4:
		err = gemma4Grammar(b, root, tools, p.Parallel)
		p.Triggers = []string{gemmaOpen}
	default:
		err = genericGrammar(b, root, tools, p.Parallel, c.Mode == Auto)
	}
	return err
}

// parameters are a tool's schema with its $refs resolved in its own scope.
func parameters(b *grammar.Builder, t Tool) ([]byte, error) {
	b.SetStrict(t.Strict)
	params, err := b.ResolveRefs(t.Parameters)
	if err != nil {
		return nil, invalid("parameters of %q: %v", t.Name, err)
	}
	return params, nil
}

// callSchema is {"name": const, "arguments": params} (and an id when asked).
func callSchema(t Tool, params []byte, typed bool, id string) []byte {
	name := `{"const": ` + jsontext.Quote(t.Name) + `}`
	if typed {
		name = `{"type": "string", "const": ` + jsontext.Quote(t.Name) + `}`
	}
	props := `"name": ` + name + `, "arguments": ` + string(params)
	req := `"name", "arguments"`
	if id != "" {
		props += `, "id": ` + id
		req += `, "id"`
	}
	return []byte(`{"type": "object", "properties": {` + props + `}, "required": [` + req + `]}`)
}

func hermesGrammar(b *grammar.Builder, root string, tools []Tool, parallel bool) error {
	var rules []string
	for _, t := range tools {
		params, err := parameters(b, t)
		if err != nil {
			return err
		}
		rules = append(rules, b.AddSchema(t.Name+"-call", callSchema(t, params, false, "")))
	}
	call := grammar.Literal(hermesOpen) + " space " + b.AddRule("tool_call", strings.Join(rules, " | ")) + " " +
		grammar.Literal(hermesClose) + " space"
	if parallel {
		call = "(" + call + ")+"
	}
	b.AddRule(root, call)
	return nil
}

func llama3Grammar(b *grammar.Builder, root string, tools []Tool) error {
	var rules []string
	for _, t := range tools {
		params, err := parameters(b, t)
		if err != nil {
			return err
		}
		args := b.AddSchema(t.Name+"-args", params)
		rules = append(rules, b.AddRule(t.Name+"-call", `"{" space ( "\"type\":" space "\"function\"," space )? `+
			grammar.Literal(`"name": "`+t.Name+`", "parameters": `)+" "+args+` "}"`))
	}
	b.AddRule(root, strings.Join(rules, " | "))
	return nil
}

// arrayGrammar is open, a JSON array of calls, then close: Mistral Nemo's
// (with a 9-character id in each call, as its template demands) and
// Phi-4's.
func arrayGrammar(b *grammar.Builder, root, open, close string, tools []Tool, parallel, nemoID bool) error {
	var items []string
	for _, t := range tools {
		params, err := parameters(b, t)
		if err != nil {
			return err
		}
		id := ""
		if nemoID {
			id = `{"type": "string", "pattern": "^[a-zA-Z0-9]{9}$"}`
		}
		items = append(items, string(callSchema(t, params, true, id)))
	}
	item := items[0]
	if len(items) > 1 {
		item = `{"anyOf": [` + strings.Join(items, ", ") + `]}`
	}
	schema := `{"type": "array", "items": ` + item + `, "minItems": 1`
	if !parallel {
		schema += `, "maxItems": 1`
	}
	rule := grammar.Literal(open) + " " + b.AddSchema("tool_calls", []byte(schema+"}"))
	if close != "" {
		rule += " " + grammar.Literal(close) + " space"
	}
	b.AddRule(root, rule)
	return nil
}

func r1Grammar(b *grammar.Builder, root string, tools []Tool, parallel bool) error {
	var rules []string
	for _, t := range tools {
		params, err := parameters(b, t)
		if err != nil {
			return err
		}
		args := b.AddSchema(t.Name+"-args", params)
		rules = append(rules, b.AddRule(t.Name+"-call", grammar.Literal(r1CallOpen+"function"+r1Sep+t.Name+"\n```json\n")+
			" "+args+" "+grammar.Literal("```"+r1CallClose)))
	}
	call := "(" + strings.Join(rules, " | ") + ")"
	if parallel {
		call += ` ( "\n"? ` + call + " )*"
	}
	b.AddRule(root, grammar.Literal(r1CallsOpen)+" "+call+" "+grammar.Literal(r1CallsClose)+" space")
	return nil
}

// maxCallIDBytes bounds a generic call's id (OpenAI's are about 30).
const maxCallIDBytes = 40

// genericGrammar is llama.cpp's Generic schema: {"tool_call": call} (or
// {"tool_calls": [call, ...]} with ids when parallel), and for auto the
// alternative {"response": "..."}.
func genericGrammar(b *grammar.Builder, root string, tools []Tool, parallel, auto bool) error {
	var calls []string
	for _, t := range tools {
		params, err := parameters(b, t)
		if err != nil {
			return err
		}
		props := `"name": {"type": "string", "const": ` + jsontext.Quote(t.Name) + `}, "arguments": ` + string(params)
		req := `"name", "arguments"`
		if parallel {
			// llama.cpp bounds the id below only: a model could write it
			// until max_tokens and the call was lost.
			props += `, "id": {"type": "string", "minLength": 4, "maxLength": ` + strconv.Itoa(maxCallIDBytes) + `}`
			req += `, "id"`
		}
		s := `{"type": "object", "properties": {` + props + `}, "required": [` + req + `]`
		if t.Description != "" {
			s += `, "description": ` + jsontext.Quote(t.Description)
		}
		calls = append(calls, s+"}")
	}
	call := calls[0]
	if len(calls) > 1 {
		call = `{"anyOf": [` + strings.Join(calls, ", ") + `]}`
	}
	schema := `{"type": "object", "properties": {"tool_call": ` + call + `}, "required": ["tool_call"]}`
	if parallel {
		schema = `{"type": "object", "properties": {"tool_calls": {"type": "array", "items": ` + call +
			`, "minItems": 1}}, "required": ["tool_calls"]}`
	}
	if auto {
		schema = `{"anyOf": [` + schema + `, {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}]}`
	}
	b.AddSchema(root, []byte(schema))
	return nil
}

// Request is one chat request's tool fields as the client sent them.
type Request struct {
	Tools, Choice []byte // the tools array and tool_choice, JSON
	// Parallel allows several calls in one response (parallel_tool_calls).
	Parallel bool
	// Constrained: the request also asks for structured output
	// (response_format, a grammar, a schema), which a call would not
	// follow; Answer (a JSON schema) is such output that a response
	// without calls can follow instead (Options.Answer).
	Constrained  bool
	Answer       []byte
	AnswerStrict bool
	// Bare is Options.Bare.
	Bare bool
}

// Prepared is all a request's tools need, from one call: the tools and
// choice as read, the plan in the model's format, and what the rendered
// conversation needs (PromptOptions).
type Prepared struct {
	Tools  []Tool
	Choice Choice
	Plan   Plan
	// System, ToolsInSystem and Vars are PromptOptions'.
	System        string
	ToolsInSystem bool
	Vars          map[string]string
}

// Calls reports whether the answer may hold calls that are read.
func (p *Prepared) Calls() bool { return len(p.Tools) > 0 && p.Choice.Mode != None }

// ErrConflict is a request that both calls tools and asks for structured
// output other than a JSON schema (a grammar, a regex), or a harmony
// model's schema: a call would not follow the request's grammar.
var ErrConflict = errors.New("tools with a tool_choice other than none combine only with a JSON response_format (not a grammar, a regex or a choice; and not on a harmony model)")

// Prepare reads a request's tools and tool_choice and plans its calls in
// format f. The conflict with structured output is refused before any
// schema is converted.
func Prepare(ctx context.Context, f Format, r Request) (Prepared, error) {
	var p Prepared
	var err error
	if p.Tools, err = ParseTools(r.Tools); err != nil {
		return p, err
	}
	if p.Choice, err = ParseChoice(r.Choice, p.Tools); err != nil {
		return p, err
	}
	o := Options{Parallel: r.Parallel, Bare: r.Bare}
	if p.Calls() && r.Constrained {
		if r.Answer == nil || f == Harmony {
			return p, ErrConflict
		}
		o.Answer, o.AnswerStrict = r.Answer, r.AnswerStrict
	}
	if p.Plan, err = Build(ctx, f, p.Tools, p.Choice, o); err != nil {
		return p, err
	}
	p.System, p.ToolsInSystem, p.Vars = PromptOptions(f, p.Tools, p.Choice)
	return p, nil
}
