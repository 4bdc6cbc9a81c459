package chat

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// ErrNoTemplate: the model has no chat template and none was configured.
var ErrNoTemplate = errors.New("the model has no chat template (tokenizer.chat_template); set chat_template to a file or one of " +
	strings.Join(BuiltinNames(), ", "))

// ErrInvalidMessages: the conversation is not an OpenAI-style messages array.
var ErrInvalidMessages = errors.New("invalid messages")

// TemplateError is a template that did not compile, raised while rendering
// (Gemma 2's "System role not supported"), or broke its budget; Problem is
// its words.
type TemplateError struct {
	Name    string // where the template came from
	Compile bool   // it did not compile, or its test render failed (the operator's problem, not the request's)
	// Budget names the limit a render broke: "time", "memory", "stack" or
	// "output"; "" for a template that raised or did not compile.
	Budget  string
	Problem string
}

func (e *TemplateError) Error() string {
	if e.Compile {
		return fmt.Sprintf("chat template %s does not compile: %s", e.Name, e.Problem)
	}
	return fmt.Sprintf("chat template %s: %s", e.Name, e.Problem)
}

// Limits bound what one render of a template may spend. A template is code
// from the model file, so it runs in a worker process (worker.go) that a
// recursion, an allocation or a loop without end can only end itself.
type Limits struct {
	Time    time.Duration // wall time of one render; default 2s
	Memory  int64         // a worker's address space beyond its start; default 512 MiB
	Stack   int64         // a worker's Go stack (recursion depth); default 64 MiB
	Output  int           // bytes of rendered text; default 8 MiB
	Workers int           // worker processes at once; default min(GOMAXPROCS, 4)
}

// DefaultLimits are Compile's limits.
func DefaultLimits() Limits {
	return Limits{Time: 2 * time.Second, Memory: 512 << 20, Stack: 64 << 20, Output: 8 << 20,
		Workers: min(runtime.GOMAXPROCS(0), 4)}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Time <= 0 {
		l.Time = d.Time
	}
	if l.Memory <= 0 {
		l.Memory = d.Memory
	}
	if l.Stack <= 0 {
		l.Stack = d.Stack
	}
	if l.Output <= 0 {
		l.Output = d.Output
	}
	if l.Workers <= 0 {
		l.Workers = d.Workers
	}
	return l
}

// Template is a compiled chat template; it is safe for concurrent use.
// Renders run in worker processes; Close stops them.
type Template struct {
	name string
	pool *pool
}

// Compile compiles a chat template's source under DefaultLimits; name says
// where it came from.
func Compile(name, src string) (*Template, error) { return CompileLimits(name, src, Limits{}) }

// CompileLimits compiles a chat template under limits (zero fields take
// DefaultLimits'). It test-renders the template in a worker; a template
// that does not compile, or whose test render breaks a limit, is a
// *TemplateError with Compile set.
func CompileLimits(name, src string, limits Limits) (*Template, error) {
	p, err := newPool(name, src, limits.withDefaults())
	if err != nil {
		return nil, err
	}
	return &Template{name: name, pool: p}, nil
}

// Name says where the template came from (a file, a builtin name, "gguf").
func (t *Template) Name() string { return t.name }

// Source is the template's text.
func (t *Template) Source() string { return t.pool.src }

// Close stops the template's worker processes; renders after it fail.
func (t *Template) Close() error {
	t.pool.close()
	return nil
}

// Input is what a template renders.
type Input struct {
	// Messages: an OpenAI-style messages array, as JSON text.
	Messages []byte
	// Tools: an OpenAI-style tools array as JSON text, or nil.
	Tools []byte
	// AddGenerationPrompt ends the text with the assistant's turn opening.
	AddGenerationPrompt bool
	// BOS and EOS: the vocabulary's token texts, as bos_token and eos_token.
	BOS, EOS string
	// Now is what strftime_now formats; zero means the time of the call.
	Now time.Time
	// TextOnly are texts that the conversation's strings (content, names,
	// tool schemas: whatever the client wrote) may hold only as text: the
	// vocabulary's control tokens, so that a user cannot forge a turn. Each
	// occurrence is rendered with Marker between its characters, which
	// tokenizing with the mark (tokenizer.Options.TextMark) keeps from
	// matching and then removes. A Marker the client wrote is doubled.
	TextOnly []string
	// Polyfill writes tools, calls and results the template does not
	// render in a way it does (llama.cpp's polyfills; for requests with
	// tools). Calls in the history are polyfilled whatever it says.
	Polyfill bool
	// System is text the conversation's system message gains (a tool
	// format's instruction); ToolsInSystem puts the tools in the system
	// message's "tools" (Phi-4-mini's template reads them there).
	System        string
	ToolsInSystem bool
	// Vars are more template variables, a JSON object
	// (chat_template_kwargs: enable_thinking, ...).
	Vars []byte
}

// Render renders a conversation within the template's limits; ctx ending
// stops it at once (its worker is killed). Errors: ErrInvalidMessages
// (wrapped) for a malformed conversation, *TemplateError when the template
// raises or breaks a limit, ctx's error when ctx ends first.
func (t *Template) Render(ctx context.Context, in Input) (string, error) {
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	return t.pool.render(ctx, in)
}
