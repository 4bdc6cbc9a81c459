package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/batchd/batchd/ipc/wire"
)

// responsesRequest is a POST /v1/responses body (OpenAI's Responses API).
type responsesRequest struct {
	Model             string            `json:"model"`
	Input             json.RawMessage   `json:"input"`
	Instructions      *string           `json:"instructions"`
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	Text              *responsesText    `json:"text"`
	Reasoning         *struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	Metadata           map[string]string `json:"metadata"`
	Store              *bool             `json:"store"`
	PreviousResponseID string            `json:"previous_response_id"`
	Stream             bool              `json:"stream"`
	// Seed makes sampling reproducible (batchd's, as on chat completions).
	Seed *int64 `json:"seed"`
	// Accepted, changing no output: who asks, what to include besides
	// (encrypted reasoning: batchd returns its reasoning as text), a
	// cache key (batchd's prefix cache needs none), the tier.
	User             string   `json:"user"`
	Include          []string `json:"include"`
	PromptCacheKey   string   `json:"prompt_cache_key"`
	SafetyIdentifier string   `json:"safety_identifier"`
	ServiceTier      string   `json:"service_tier"`
	Truncation       string   `json:"truncation"`
	// Refused by name.
	Background   *bool           `json:"background"`
	Conversation json.RawMessage `json:"conversation"`
	Prompt       json.RawMessage `json:"prompt"`
	MaxToolCalls *int            `json:"max_tool_calls"`
	TopLogprobs  *int            `json:"top_logprobs"`
}

type responsesText struct {
	Format    json.RawMessage `json:"format"`
	Verbosity string          `json:"verbosity"`
}

// inputItem is an input item of any type.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// function_call (Namespace: a namespace tool's)
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Arguments string `json:"arguments"`
	// function_call_output
	Output json.RawMessage `json:"output"`
	// custom_tool_call
	Input string `json:"input"`
	// reasoning
	Summary []textPart `json:"summary"`
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolRef is what a tool's name, as the model sees it, stands for: a
// custom tool (its calls are custom_tool_call items) and the namespace a
// namespace tool's function is in ("" at the top level).
type toolRef struct {
	custom          bool
	namespace, name string
}

// toolSet holds a request's tools by the names the model sees: a function
// in a namespace is "NAMESPACE.NAME" (OpenAI's function names have no
// dot, so the name splits back unambiguously).
type toolSet map[string]toolRef

// modelName is the name the model sees for a tool of a namespace.
func modelName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "." + name
}

// responsesSubmit maps a Responses request (after previous, the stored
// conversation it continues) to a submit; tools gains its tools.
func responsesSubmit(req *responsesRequest, previous []map[string]any, tools toolSet) (*wire.Submit, []map[string]any, *httpError) {
	switch {
	case req.Background != nil && *req.Background:
		return nil, nil, errInvalid("background", "background: batchd answers in the request (stream for progress)")
	case len(req.Conversation) > 0 && string(req.Conversation) != "null":
		return nil, nil, errInvalid("conversation", "conversation: not served; continue with previous_response_id")
	case len(req.Prompt) > 0 && string(req.Prompt) != "null":
		return nil, nil, errInvalid("prompt", "prompt: stored prompt templates are not served")
	case req.MaxToolCalls != nil:
		return nil, nil, errInvalid("max_tool_calls", "max_tool_calls: built-in tools are not served")
	case req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return nil, nil, errInvalid("top_logprobs", "top_logprobs: not served on /v1/responses (use /v1/chat/completions)")
	case req.Truncation != "" && req.Truncation != "disabled":
		return nil, nil, errInvalid("truncation", "truncation %q: batchd does not drop turns (disabled)", req.Truncation)
	}
	msgs := append([]map[string]any(nil), previous...)
	if req.Instructions != nil && *req.Instructions != "" {
		msgs = append([]map[string]any{{"role": "system", "content": *req.Instructions}}, msgs...)
	}
	input, herr := inputMessages(req.Input)
	if herr != nil {
		return nil, nil, herr
	}
	msgs = append(msgs, input...)
	if len(msgs) == 0 {
		return nil, nil, errInvalid("input", "input: no messages")
	}
	s := &wire.Submit{Type: wire.TypeSubmit, Model: req.Model, Stream: true, Temperature: 1, Seed: wire.SeedRandom}
	b, err := json.Marshal(msgs)
	if err != nil {
		return nil, nil, errInvalid("input", "input: %v", err)
	}
	s.Messages = wire.JSON(b)
	if m := req.MaxOutputTokens; m != nil {
		if *m < 1 || *m > 1<<31-1 {
			return nil, nil, errInvalid("max_output_tokens", "max_output_tokens %d: want 1 to %d", *m, 1<<31-1)
		}
		s.MaxTokens = int(*m)
	}
	if req.Temperature != nil {
		if *req.Temperature < 0 || *req.Temperature > 2 {
			return nil, nil, errInvalid("temperature", "temperature %v: want 0 to 2", *req.Temperature)
		}
		s.Temperature = float32(*req.Temperature)
	}
	if req.TopP != nil {
		s.TopP = float32(*req.TopP)
	}
	if req.Seed != nil {
		if *req.Seed < wire.SeedRandom {
			return nil, nil, errInvalid("seed", "seed %d: want -1 (random) or 0 and up", *req.Seed)
		}
		s.Seed = *req.Seed
	}
	if herr := responsesTools(req, s, tools); herr != nil {
		return nil, nil, herr
	}
	if herr := responsesFormat(req, s); herr != nil {
		return nil, nil, herr
	}
	s.ReasoningFormat = "auto"
	if r := req.Reasoning; r != nil && r.Effort != nil {
		if herr := reasoningEffort(*r.Effort, s); herr != nil {
			herr.param = "reasoning.effort"
			return nil, nil, herr
		}
	}
	return s, msgs, nil
}

// inputMessages maps input (a string, or items) to chat messages.
func inputMessages(raw json.RawMessage) ([]map[string]any, *httpError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errInvalid("input", "input: %v", err)
		}
		return []map[string]any{{"role": "user", "content": s}}, nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errInvalid("input", "input: want a string or an array of items: %v", err)
	}
	var c conv
	for i, it := range items {
		if herr := c.add(it, fmt.Sprintf("input[%d]", i)); herr != nil {
			return nil, herr
		}
	}
	return c.out, nil
}

// conv is input items becoming chat messages: a reasoning item waits for
// the assistant turn it belongs to; calls join the assistant turn before.
type conv struct {
	out       []map[string]any
	reasoning string
}

// assistant is the assistant turn the next call or text joins.
func (c *conv) assistant() map[string]any {
	if n := len(c.out); n > 0 && c.out[n-1]["role"] == "assistant" {
		return c.out[n-1]
	}
	m := map[string]any{"role": "assistant", "content": ""}
	if c.reasoning != "" {
		m["reasoning_content"], c.reasoning = c.reasoning, ""
	}
	c.out = append(c.out, m)
	return m
}

// call adds a call to the assistant turn.
func (c *conv) call(id, name, arguments string) {
	m := c.assistant()
	calls, _ := m["tool_calls"].([]map[string]any)
	m["tool_calls"] = append(calls, map[string]any{"id": id, "type": "function",
		"function": map[string]any{"name": name, "arguments": arguments}})
}

func (c *conv) add(it inputItem, where string) *httpError {
	switch it.Type {
	case "", "message":
		text, herr := partsText(it.Content, where)
		if herr != nil {
			return herr
		}
		role := it.Role
		switch role {
		case "developer":
			role = "system"
		case "user", "system":
		case "assistant":
			m := c.assistant()
			m["content"] = m["content"].(string) + text
			return nil
		default:
			return errInvalid("input", "%s.role %q: want user, system, developer or assistant", where, it.Role)
		}
		c.out = append(c.out, map[string]any{"role": role, "content": text})
	case "function_call":
		c.call(it.CallID, modelName(it.Namespace, it.Name), it.Arguments)
	case "custom_tool_call": // its text is the custom tool's one argument
		args, _ := json.Marshal(map[string]string{"input": it.Input})
		c.call(it.CallID, modelName(it.Namespace, it.Name), string(args))
	case "function_call_output", "custom_tool_call_output":
		text, herr := outputText(it.Output, where)
		if herr != nil {
			return herr
		}
		c.out = append(c.out, map[string]any{"role": "tool", "tool_call_id": it.CallID, "content": text})
	case "reasoning":
		var parts []string
		for _, p := range it.Summary {
			parts = append(parts, p.Text)
		}
		if t, herr := partsText(it.Content, where); herr == nil && t != "" {
			parts = append(parts, t)
		}
		c.reasoning = strings.Join(parts, "\n")
	default:
		return errInvalid("input", "%s: a %q item is not served (messages, function_call, function_call_output, custom_tool_call, reasoning)",
			where, it.Type)
	}
	return nil
}

// partsText joins a message's text: a string, or input_text, output_text
// and reasoning_text parts.
func partsText(raw json.RawMessage, where string) (string, *httpError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errInvalid("input", "%s.content: %v", where, err)
		}
		return s, nil
	}
	var parts []textPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errInvalid("input", "%s.content: want a string or content parts: %v", where, err)
	}
	var b strings.Builder
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text", "reasoning_text", "summary_text":
			b.WriteString(p.Text)
		default:
			return "", errInvalid("input", "%s.content[%d]: a %q part; batchd serves text models", where, j, p.Type)
		}
	}
	return b.String(), nil
}

// outputText is a function_call_output's output: a string or text parts.
func outputText(raw json.RawMessage, where string) (string, *httpError) {
	return partsText(raw, where+".output")
}

// customParameters are a custom (freeform) tool's, as a function's: one
// string, "input", held to the tool's regex where it has one. A Lark
// grammar is refused by name: batchd's grammars are GBNF, schemas and regexes.
func customParameters(where string, f *struct{ Type, Syntax, Definition string }) (json.RawMessage, *httpError) {
	input := map[string]any{"type": "string"}
	switch {
	case f == nil || f.Type == "text":
	case f.Type == "grammar" && f.Syntax == "regex": // the whole input matches
		input["pattern"] = "^(" + strings.TrimSuffix(strings.TrimPrefix(f.Definition, "^"), "$") + ")$"
	case f.Type == "grammar":
		return nil, errInvalid("tools", "%s.format: a %s grammar is not served; give a regex or text format", where, f.Syntax)
	default:
		return nil, errInvalid("tools", "%s.format.type %q: want text or grammar", where, f.Type)
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"input": input}, "required": []string{"input"}})
	return b, nil
}

// responsesTools maps function and custom tools (flat in this API, or
// grouped in namespace tools) and tool_choice to the chat fields, noting
// each in tools; the built-in tools are refused by name.
func responsesTools(req *responsesRequest, s *wire.Submit, tools toolSet) *httpError {
	var out []map[string]any
	for i, raw := range req.Tools {
		var ns struct {
			Type, Name, Description string
			Tools                   []json.RawMessage
		}
		if err := json.Unmarshal(raw, &ns); err != nil {
			return errInvalid("tools", "tools[%d]: %v", i, err)
		}
		if ns.Type != "namespace" {
			fn, herr := responsesTool(raw, fmt.Sprintf("tools[%d]", i), "", tools)
			if herr != nil {
				return herr
			}
			out = append(out, fn)
			continue
		}
		if ns.Name == "" || strings.Contains(ns.Name, ".") || len(ns.Tools) == 0 {
			return errInvalid("tools", "tools[%d]: a namespace needs a name (no dots) and tools", i)
		}
		for j, inner := range ns.Tools {
			fn, herr := responsesTool(inner, fmt.Sprintf("tools[%d].tools[%d]", i, j), ns.Name, tools)
			if herr != nil {
				return herr
			}
			if ns.Description != "" { // the model sees no namespace: its description leads each function's
				f := fn["function"].(map[string]any)
				f["description"] = strings.TrimSpace(ns.Description + "\n" + fmt.Sprint(f["description"]))
			}
			out = append(out, fn)
		}
	}
	if len(out) > 0 {
		b, _ := json.Marshal(out)
		s.Tools = wire.JSON(b)
	}
	if c := bytes.TrimSpace(req.ToolChoice); len(c) > 0 && string(c) != "null" {
		var named struct {
			Type, Name, Namespace string
		}
		if c[0] == '{' {
			if err := json.Unmarshal(c, &named); err != nil || named.Type != "function" && named.Type != "custom" || named.Name == "" {
				return errInvalid("tool_choice", "tool_choice: want auto, none, required or {\"type\": \"function\", \"name\": ...}")
			}
			b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": modelName(named.Namespace, named.Name)}})
			c = b
		}
		s.ToolChoice = wire.JSON(c)
	}
	s.ParallelToolCalls = req.ParallelToolCalls
	return nil
}

// responsesTool maps one function or custom tool (in namespace, or at
// the top level) to a chat tool, noting it in tools.
func responsesTool(raw json.RawMessage, where, namespace string, tools toolSet) (map[string]any, *httpError) {
	var t struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
		Format      *struct {
			Type, Syntax, Definition string
		} `json:"format"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, errInvalid("tools", "%s: %v", where, err)
	}
	switch t.Type {
	case "custom": // freeform: its input is text, as one string argument
		params, herr := customParameters(where, t.Format)
		if herr != nil {
			return nil, herr
		}
		t.Parameters = params
	case "function":
	default:
		return nil, errInvalid("tools", "%s: the %q tool is not served; batchd runs function, custom and namespace tools", where, t.Type)
	}
	name := modelName(namespace, t.Name)
	if _, dup := tools[name]; dup || t.Name == "" {
		return nil, errInvalid("tools", "%s: the name %q is empty or given twice", where, name)
	}
	tools[name] = toolRef{custom: t.Type == "custom", namespace: namespace, name: t.Name}
	fn := map[string]any{"name": name}
	if t.Description != "" {
		fn["description"] = t.Description
	}
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		fn["parameters"] = t.Parameters
	}
	if t.Strict != nil {
		fn["strict"] = *t.Strict
	}
	return map[string]any{"type": "function", "function": fn}, nil
}

// responsesFormat maps text.format: json_schema and json_object are held
// by the grammar, text is free.
func responsesFormat(req *responsesRequest, s *wire.Submit) *httpError {
	if req.Text == nil || len(req.Text.Format) == 0 || string(req.Text.Format) == "null" {
		return nil
	}
	var f struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	}
	if err := json.Unmarshal(req.Text.Format, &f); err != nil {
		return errInvalid("text.format", "text.format: %v", err)
	}
	switch f.Type {
	case "text":
	case "json_object":
		s.JSONObject = true
	case "json_schema":
		if len(f.Schema) == 0 || string(f.Schema) == "null" {
			return errInvalid("text.format", "text.format: json_schema needs a schema")
		}
		s.JSONSchema, s.JSONSchemaStrict = wire.JSON(f.Schema), f.Strict
	default:
		return errInvalid("text.format", "text.format.type %q: want text, json_object or json_schema", f.Type)
	}
	return nil
}
