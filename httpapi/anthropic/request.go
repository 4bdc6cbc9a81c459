package anthropic

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/batchd/batchd/ipc/wire"
)

// request is a Messages API request.
type request struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Messages      []inMessage     `json:"messages"`
	Tools         []tool          `json:"tools"`
	ToolChoice    *toolChoice     `json:"tool_choice"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	Thinking      *thinking       `json:"thinking"`
	OutputConfig  *outputConfig   `json:"output_config"`
	// Accepted and not acted on: they change no output.
	Metadata     json.RawMessage `json:"metadata"`
	ServiceTier  string          `json:"service_tier"`
	CacheControl json.RawMessage `json:"cache_control"`
	InferenceGeo string          `json:"inference_geo"`
	Speed        string          `json:"speed"`
	// Refused by name: features batchd does not run.
	MCPServers        json.RawMessage `json:"mcp_servers"`
	Container         json.RawMessage `json:"container"`
	ContextManagement json.RawMessage `json:"context_management"`
}

type inMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// block is a content block of any type.
type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	// thinking
	Thinking string `json:"thinking"`
}

type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

// outputConfig: the answer's JSON schema, and the reasoning effort.
type outputConfig struct {
	Effort string `json:"effort"`
	Format *struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	} `json:"format"`
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
	Display      string `json:"display"` // "omitted": thinking blocks come back empty
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// thinkingOn reports whether the request asked for thinking.
func (r *request) thinkingOn() bool { return r.Thinking != nil && r.Thinking.Type != "disabled" }

// submit maps the request to a submit; a message says what cannot be
// served. counting: for count_tokens, where max_tokens is not needed.
func (r *request) submit(counting bool) (*wire.Submit, string) {
	switch {
	case r.Model == "":
		return nil, "model: required"
	case !counting && r.MaxTokens == nil:
		return nil, "max_tokens: required"
	case !counting && *r.MaxTokens < 1:
		return nil, fmt.Sprintf("max_tokens: %d; want at least 1", *r.MaxTokens)
	case len(r.Messages) == 0:
		return nil, "messages: at least one message"
	case present(r.MCPServers):
		return nil, "mcp_servers: batchd does not connect to MCP servers"
	case present(r.Container):
		return nil, "container: batchd runs no code containers"
	case present(r.ContextManagement):
		return nil, "context_management: not served"
	}
	s := &wire.Submit{Type: wire.TypeSubmit, Model: r.Model, Stream: true, Temperature: 1, Seed: wire.SeedRandom,
		Stop: r.StopSequences}
	if r.MaxTokens != nil {
		s.MaxTokens = *r.MaxTokens
	}
	if r.Temperature != nil {
		if *r.Temperature < 0 || *r.Temperature > 1 {
			return nil, fmt.Sprintf("temperature: %v; want 0 to 1", *r.Temperature)
		}
		s.Temperature = float32(*r.Temperature)
	}
	if r.TopP != nil {
		s.TopP = float32(*r.TopP)
	}
	if r.TopK != nil {
		s.TopK = *r.TopK
	}
	msgs, err := r.conversation()
	if err != nil {
		return nil, err.Error()
	}
	if s.Messages, err = json.Marshal(msgs); err != nil {
		return nil, "messages: " + err.Error()
	}
	if msg := r.tools(s); msg != "" {
		return nil, msg
	}
	if c := r.OutputConfig; c != nil && c.Format != nil {
		if c.Format.Type != "json_schema" || !present(c.Format.Schema) {
			return nil, fmt.Sprintf("output_config.format: type %q; want json_schema with a schema", c.Format.Type)
		}
		strict := true
		s.JSONSchema, s.JSONSchemaStrict = wire.JSON(c.Format.Schema), &strict
	}
	return s, r.reasoning(s)
}

// reasoning maps thinking: enabled returns the model's reasoning as
// thinking blocks; disabled (and absent, Anthropic's default) asks the
// template not to think. A budget is a target, as Anthropic's is: it must
// be at least 1024 and under max_tokens, which bounds it.
func (r *request) reasoning(s *wire.Submit) string {
	s.ReasoningFormat = "auto"
	on := r.thinkingOn()
	if t := r.Thinking; t != nil {
		switch t.Type {
		case "enabled":
			if t.BudgetTokens < 1024 || r.MaxTokens != nil && t.BudgetTokens >= *r.MaxTokens {
				return fmt.Sprintf("thinking.budget_tokens: %d; want at least 1024 and less than max_tokens", t.BudgetTokens)
			}
		case "adaptive", "between_tools", "disabled": // the model thinks as it is trained to
		default:
			return fmt.Sprintf("thinking.type %q: want enabled, adaptive, between_tools or disabled", t.Type)
		}
	}
	kwargs := fmt.Sprintf(`{"enable_thinking": %t}`, on)
	if c := r.OutputConfig; c != nil && c.Effort != "" {
		switch c.Effort {
		case "low", "medium", "high":
		case "max", "xhigh":
			c.Effort = "high"
		default:
			return fmt.Sprintf("output_config.effort %q: want low, medium, high, xhigh or max", c.Effort)
		}
		// The template's reasoning effort (gpt-oss's Reasoning: line).
		kwargs = fmt.Sprintf(`{"enable_thinking": %t, "reasoning_effort": %q}`, on, c.Effort)
	}
	s.TemplateKwargs = wire.JSON(kwargs)
	return ""
}

// tools maps tools and tool_choice to OpenAI's shapes.
func (r *request) tools(s *wire.Submit) string {
	if len(r.Tools) > 0 {
		var out []map[string]any
		for i, t := range r.Tools {
			if t.Type != "" && t.Type != "custom" {
				return fmt.Sprintf("tools[%d]: the server tool %q is not served; define a client tool with input_schema", i, t.Type)
			}
			if !present(t.InputSchema) {
				return fmt.Sprintf("tools[%d]: input_schema: required", i)
			}
			fn := map[string]any{"name": t.Name, "parameters": t.InputSchema}
			if t.Description != "" {
				fn["description"] = t.Description
			}
			out = append(out, map[string]any{"type": "function", "function": fn})
		}
		b, _ := json.Marshal(out)
		s.Tools = wire.JSON(b)
	}
	c := r.ToolChoice
	if c == nil {
		return ""
	}
	var choice any
	switch c.Type {
	case "auto":
		choice = "auto"
	case "any":
		choice = "required"
	case "none":
		choice = "none"
	case "tool":
		choice = map[string]any{"type": "function", "function": map[string]string{"name": c.Name}}
	default:
		return fmt.Sprintf("tool_choice.type %q: want auto, any, tool or none", c.Type)
	}
	if c.Type != "none" && len(r.Tools) == 0 {
		return "tool_choice: no tools"
	}
	b, _ := json.Marshal(choice)
	s.ToolChoice = wire.JSON(b)
	if c.DisableParallelToolUse {
		no := false
		s.ParallelToolCalls = &no
	}
	return ""
}

// conversation is the request as OpenAI-style messages: system first,
// tool results as tool messages, tool_use as tool_calls, thinking as
// reasoning_content.
func (r *request) conversation() ([]map[string]any, error) {
	var out []map[string]any
	if present(r.System) {
		sys, err := textOf(r.System, "system")
		if err != nil {
			return nil, err
		}
		out = append(out, map[string]any{"role": "system", "content": sys})
	}
	for i, m := range r.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		blocks, err := blocksOf(m.Content, where)
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case "user":
			msgs, err := userTurn(blocks, where)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
		case "assistant":
			msg, err := assistantTurn(blocks, where)
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
		default:
			return nil, fmt.Errorf("%s.role %q: want user or assistant (system goes in system)", where, m.Role)
		}
	}
	return out, nil
}

// blocksOf reads content: a string is one text block.
func blocksOf(raw json.RawMessage, where string) ([]block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s.content: %v", where, err)
		}
		return []block{{Type: "text", Text: s}}, nil
	}
	var bs []block
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Errorf("%s.content: want a string or content blocks: %v", where, err)
	}
	return bs, nil
}

// textOf joins the text of content (a string or text blocks).
func textOf(raw json.RawMessage, where string) (string, error) {
	bs, err := blocksOf(raw, where)
	if err != nil {
		return "", err
	}
	var parts []string
	for j, b := range bs {
		if b.Type != "text" {
			return "", fmt.Errorf("%s[%d]: a %q block; batchd serves text models, which read text blocks here", where, j, b.Type)
		}
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n"), nil
}

func userTurn(bs []block, where string) ([]map[string]any, error) {
	var out []map[string]any
	var text []string
	for j, b := range bs {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_result":
			content := ""
			if present(b.Content) {
				var err error
				if content, err = textOf(b.Content, fmt.Sprintf("%s.content[%d].content", where, j)); err != nil {
					return nil, err
				}
			}
			if b.IsError && content == "" {
				content = "error"
			}
			out = append(out, map[string]any{"role": "tool", "tool_call_id": b.ToolUseID, "content": content})
		default:
			return nil, fmt.Errorf("%s.content[%d]: a %q block in a user turn; batchd serves text, tool_result", where, j, b.Type)
		}
	}
	if len(text) > 0 || len(out) == 0 {
		out = append(out, map[string]any{"role": "user", "content": strings.Join(text, "\n")})
	}
	return out, nil
}

func assistantTurn(bs []block, where string) (map[string]any, error) {
	msg := map[string]any{"role": "assistant"}
	var text, thought []string
	var calls []map[string]any
	for j, b := range bs {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "thinking":
			thought = append(thought, b.Thinking)
		case "redacted_thinking": // another model's, unreadable here
		case "tool_use":
			input := b.Input
			if !present(input) {
				input = json.RawMessage("{}")
			}
			calls = append(calls, map[string]any{"id": b.ID, "type": "function",
				"function": map[string]any{"name": b.Name, "arguments": string(input)}})
		default:
			return nil, fmt.Errorf("%s.content[%d]: a %q block in an assistant turn; batchd serves text, thinking, tool_use", where, j, b.Type)
		}
	}
	msg["content"] = strings.Join(text, "")
	if len(thought) > 0 {
		msg["reasoning_content"] = strings.Join(thought, "\n")
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	return msg, nil
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// randomID is n random letters and digits.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idChars[int(b[i])%len(idChars)]
	}
	return string(b)
}
