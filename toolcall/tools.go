package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// Bounds on a request's tools.
const (
	MaxTools     = 128 // OpenAI's own limit
	maxNameBytes = 64
)

// ErrInvalid is a tools array or tool_choice that cannot be honoured.
var ErrInvalid = errors.New("invalid tools")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Tool is one function a model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is its JSON Schema as the client wrote it (an object
	// schema; {"type": "object", "properties": {}} when absent).
	Parameters []byte
	// Strict: the client asked (function.strict) that the arguments match
	// the schema exactly: keywords a grammar cannot enforce are refused.
	Strict bool
}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// ParseTools reads an OpenAI tools array: [{"type": "function",
// "function": {"name", "description", "parameters", "strict"}}].
func ParseTools(raw []byte) ([]Tool, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid("tools: want an array")
	}
	if len(items) > MaxTools {
		return nil, invalid("%d tools: at most %d", len(items), MaxTools)
	}
	tools := make([]Tool, 0, len(items))
	seen := map[string]bool{}
	for i, item := range items {
		var t struct {
			Type     string `json:"type"`
			Function *struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
				Strict      bool            `json:"strict"`
			} `json:"function"`
		}
		if err := json.Unmarshal(item, &t); err != nil || t.Function == nil {
			return nil, invalid(`tools[%d]: want {"type": "function", "function": {"name": ...}}`, i)
		}
		if t.Type != "function" {
			return nil, invalid("tools[%d]: type %q: only function tools are supported", i, t.Type)
		}
		f := t.Function
		if !namePattern.MatchString(f.Name) || len(f.Name) > maxNameBytes {
			return nil, invalid("tools[%d]: function name %q: want 1 to %d of a-z, A-Z, 0-9, _, . and -", i, f.Name, maxNameBytes)
		}
		if seen[f.Name] {
			return nil, invalid("tools[%d]: function %q is given twice", i, f.Name)
		}
		seen[f.Name] = true
		params := bytes.TrimSpace(f.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type": "object", "properties": {}}`)
		} else if params[0] != '{' {
			return nil, invalid("tools[%d]: parameters of %q: want a JSON Schema object", i, f.Name)
		}
		tools = append(tools, Tool{Name: f.Name, Description: f.Description, Parameters: params, Strict: f.Strict})
	}
	return tools, nil
}

// Mode is what tool_choice asks of a response.
type Mode int

const (
	Auto     Mode = iota // the model may answer or call
	None                 // no call is forced or parsed
	Required             // at least one call
	Named                // a call of Choice.Name
)

// Choice is a request's tool_choice.
type Choice struct {
	Mode Mode
	Name string // for Named
}

// ParseChoice reads tool_choice: "auto", "none", "required", or
// {"type": "function", "function": {"name": ...}} naming one of tools.
// Absent means auto when there are tools (OpenAI's default).
func ParseChoice(raw []byte, tools []Tool) (Choice, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return Choice{Mode: Auto}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto":
			return Choice{Mode: Auto}, nil
		case "none":
			return Choice{Mode: None}, nil
		case "required", "any": // "any": Mistral's and Anthropic's word for it
			if len(tools) == 0 {
				return Choice{}, invalid(`tool_choice "required" without tools`)
			}
			return Choice{Mode: Required}, nil
		}
		return Choice{}, invalid(`tool_choice %q: want "auto", "none", "required" or a function`, s)
	}
	var o struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.Type != "function" || o.Function.Name == "" {
		return Choice{}, invalid(`tool_choice: want "auto", "none", "required" or {"type": "function", "function": {"name": ...}}`)
	}
	for _, t := range tools {
		if t.Name == o.Function.Name {
			return Choice{Mode: Named, Name: t.Name}, nil
		}
	}
	return Choice{}, invalid("tool_choice names function %q, which is not among the tools", o.Function.Name)
}
