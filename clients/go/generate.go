package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sort"

	"github.com/batchd/batchd/ipc/wire"
)

// SeedRandom as a Request's Seed asks the daemon to draw a seed.
const SeedRandom = wire.SeedRandom

// Request is one generation. Prompt is encoded with BOS unless Tokens is set.
type Request struct {
	// Model names the model (a name or alias of Client.Models); "" is the
	// daemon's default. KeepAlive is how long it stays loaded after this
	// request ("5m", "0", "-1" forever; "" its default).
	Model, KeepAlive string
	Prompt           string
	// Suffix, with Prompt, asks for the text between them (fill in the
	// middle, through the vocabulary's FIM tokens).
	Suffix            string
	Tokens            []int
	MaxTokens         int
	Temperature       float32
	TopK              int
	TopP              float32
	MinP              float32
	RepetitionPenalty float32
	FrequencyPenalty  float32 // OpenAI's, over the generated tokens; [-2, 2]
	PresencePenalty   float32
	Seed              int64 // SeedRandom (-1) draws one; 0 and up are reproducible
	Stop              []string
	StopTokenIDs      []int
	IgnoreEOS         bool // run to MaxTokens past the end-of-generation tokens (benchmarks)
	// Logprobs reports each generated token's log-probability, with
	// TopLogprobs (0 to 20) alternatives.
	Logprobs    bool
	TopLogprobs int
	Priority    int
	Channel     string
	Tags        []string // routing hints for a request without a channel
	// CacheSalt shares prefix-cache blocks only with requests of the same
	// salt (vLLM's cache_salt).
	CacheSalt string
	// LiteralSpecial keeps special-token text in Prompt as text (the
	// daemon parses it into tokens by default, as llama.cpp's server does).
	LiteralSpecial bool
	// Messages makes a chat request instead of Prompt or Tokens: the
	// model's chat template renders them. Tools (an OpenAI-style tools
	// array, as JSON) are the functions the model may call: its calls come
	// back parsed in Result.ToolCalls. ToolChoice is "auto" (""), "none",
	// "required" or a function's name; NoParallelToolCalls allows one
	// call per answer.
	Messages            []Message
	Tools               json.RawMessage
	ToolChoice          string
	NoParallelToolCalls bool
	// PreviousResponseID continues a stored conversation (one a request
	// with Store kept, over this socket or /v1/responses): Messages are
	// the new turn. Store keeps this conversation, its answer last, and
	// Result.ResponseID names it for the next turn.
	PreviousResponseID string
	Store              bool
	// KeepReasoning leaves a <think> block in Text (reasoning_format
	// none); by default it comes apart, in Reasoning.
	KeepReasoning bool
	// TemplateKwargs are more chat template variables, as a JSON object
	// (Qwen 3's {"enable_thinking": false}).
	TemplateKwargs json.RawMessage
	// Structured output, at most one: a GBNF Grammar, a JSONSchema (refusing
	// keywords it cannot enforce unless SchemaNotStrict), any JSON object,
	// a Regex the whole output matches, or one of Choice.
	Grammar         string
	JSONSchema      json.RawMessage
	SchemaNotStrict bool
	JSONObject      bool
	Regex           string
	Choice          []string
	// NoGenerationPrompt leaves out the assistant's turn opening.
	NoGenerationPrompt bool
	// OnAccepted, when set, is called with the server-wide request id as
	// soon as the daemon accepts the request (before any token), so that a
	// caller can show it or cancel by it.
	OnAccepted func(requestID uint64)
}

// Delta is a piece of streamed output.
type Delta struct {
	RequestID uint64
	Text      string
	Tokens    []int
	Logprobs  []wire.Logprob // one per token, when the request asked
	// Reasoning is a piece of the model's reasoning; ToolCalls are pieces
	// of its calls (a call's first piece has its ID and Name).
	Reasoning string
	ToolCalls []wire.ToolCallDelta
}

// Result is a finished request.
type Result struct {
	RequestID    uint64
	Text         string
	Tokens       []int
	PromptTokens []int // set when not streamed
	FinishReason string
	Usage        wire.Usage
	Timings      wire.Timings
	Preemptions  int
	Logprobs     []wire.Logprob // one per token in Tokens, when the request asked
	// Reasoning: the model's <think> block, apart from Text; ToolCalls:
	// the calls it made (FinishReason "tool_calls").
	Reasoning string
	ToolCalls []wire.ToolCall
	// StopSequence is the stop string that ended the text, when one did.
	StopSequence string
	// ResponseID names the stored conversation (Request.Store).
	ResponseID string
}

// Message is one turn of a conversation. Content is the text; Parts, when
// set, is content as a list of text parts instead. Other OpenAI fields
// (tool calls, names) go in Extra and reach the template as they are
// (UnmarshalJSON keeps each as its json.RawMessage, key order and all).
type Message struct {
	Role    string
	Content string
	Parts   []string
	Extra   map[string]any
}

// MarshalJSON writes the OpenAI shape: role and content first, in that order.
func (m Message) MarshalJSON() ([]byte, error) {
	var content any = m.Content
	if m.Parts != nil {
		parts := make([]map[string]string, len(m.Parts))
		for i, p := range m.Parts {
			parts[i] = map[string]string{"type": "text", "text": p}
		}
		content = parts
	}
	role, err := json.Marshal(m.Role)
	if err != nil {
		return nil, err
	}
	c, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"role":`), role...)
	out = append(append(out, `,"content":`...), c...)
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		if k != "role" && k != "content" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(m.Extra[k])
		if err != nil {
			return nil, err
		}
		out = append(append(append(append(out, ','), kb...), ':'), vb...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON reads the OpenAI shape: content as a string, an array of
// text parts, or null; other fields into Extra.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message{}
	if err := json.Unmarshal(raw["role"], &m.Role); err != nil {
		return fmt.Errorf("role: %w", err)
	}
	if c, ok := raw["content"]; ok && string(c) != "null" {
		if json.Unmarshal(c, &m.Content) != nil {
			var parts []struct{ Type, Text string }
			if err := json.Unmarshal(c, &parts); err != nil {
				return fmt.Errorf("content: want a string or text parts: %w", err)
			}
			m.Parts = []string{}
			for _, p := range parts {
				m.Parts = append(m.Parts, p.Text)
			}
		}
	}
	for k, v := range raw {
		if k == "role" || k == "content" {
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string]any{}
		}
		m.Extra[k] = append(json.RawMessage(nil), v...) // as written: a tool call's key order reaches the template
	}
	return nil
}

func (r *Request) frame(id uint64, stream bool) (*wire.Submit, error) {
	s := &wire.Submit{Type: wire.TypeSubmit, ID: id, Model: r.Model, KeepAlive: r.KeepAlive, Prompt: r.Prompt, Suffix: r.Suffix, Tokens: r.Tokens, MaxTokens: r.MaxTokens,
		Temperature: r.Temperature, TopK: r.TopK, TopP: r.TopP, MinP: r.MinP, RepetitionPenalty: r.RepetitionPenalty,
		FrequencyPenalty: r.FrequencyPenalty, PresencePenalty: r.PresencePenalty,
		Seed: r.Seed, Stop: r.Stop, StopTokenIDs: r.StopTokenIDs, IgnoreEOS: r.IgnoreEOS, Logprobs: r.Logprobs, TopLogprobs: r.TopLogprobs, Priority: r.Priority, Channel: r.Channel, Tags: r.Tags, CacheSalt: r.CacheSalt,
		Stream: stream, ParseSpecial: parseSpecial(r.LiteralSpecial),
		Grammar: r.Grammar, JSONObject: r.JSONObject, Regex: r.Regex, Choice: r.Choice,
		PreviousResponseID: r.PreviousResponseID, Store: r.Store}
	if len(r.JSONSchema) > 0 {
		s.JSONSchema = wire.JSON(r.JSONSchema)
		if r.SchemaNotStrict {
			f := false
			s.JSONSchemaStrict = &f
		}
	}
	if r.Messages != nil {
		b, err := json.Marshal(r.Messages)
		if err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
		s.Messages = wire.JSON(b)
		if len(r.Tools) > 0 {
			s.Tools = wire.JSON(r.Tools)
		}
		switch r.ToolChoice {
		case "":
		case "auto", "none", "required":
			s.ToolChoice = wire.JSON(`"` + r.ToolChoice + `"`)
		default:
			b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": r.ToolChoice}})
			s.ToolChoice = wire.JSON(b)
		}
		if r.NoParallelToolCalls {
			f := false
			s.ParallelToolCalls = &f
		}
		if r.KeepReasoning {
			s.ReasoningFormat = "none"
		}
		if len(r.TemplateKwargs) > 0 {
			s.TemplateKwargs = wire.JSON(r.TemplateKwargs)
		}
		if r.NoGenerationPrompt {
			f := false
			s.AddGenerationPrompt = &f
		}
	}
	return s, nil
}

func parseSpecial(literal bool) *bool {
	if !literal {
		return nil
	}
	f := false
	return &f
}

// Generate runs req. With fn set it streams: fn gets every delta as it
// arrives, and an error from fn cancels the request and is returned.
// Cancelling ctx cancels the request on the daemon.
func (c *Client) Generate(ctx context.Context, req Request, fn func(Delta) error) (*Result, error) {
	id, mb := c.open()
	defer c.closeCall(id)
	f, err := req.frame(id, fn != nil)
	if err != nil {
		return nil, err
	}
	if err := c.write(f); err != nil {
		return nil, err
	}
	body, err := c.recv(ctx, mb)
	if err != nil {
		return nil, err
	}
	var acc wire.Accepted
	if err := wire.Decode(body, &acc); err != nil {
		return nil, err
	}
	res := &Result{RequestID: acc.RequestID}
	if req.OnAccepted != nil {
		req.OnAccepted(acc.RequestID)
	}
	for {
		body, err := c.recv(ctx, mb)
		if err != nil {
			c.abandon(id)
			return res, err
		}
		h, _ := wire.DecodeHeader(body)
		switch h.Type {
		case wire.TypeToken:
			var t wire.Token
			if err := wire.Decode(body, &t); err != nil {
				c.abandon(id)
				return res, err
			}
			res.Text += t.Text
			res.Reasoning += t.Reasoning
			res.Tokens = append(res.Tokens, t.Tokens...)
			res.Logprobs = append(res.Logprobs, t.Logprobs...)
			if fn != nil {
				if err := fn(Delta{RequestID: acc.RequestID, Text: t.Text, Tokens: t.Tokens, Logprobs: t.Logprobs,
					Reasoning: t.Reasoning, ToolCalls: t.ToolCalls}); err != nil {
					c.abandon(id)
					return res, err
				}
			}
		case wire.TypeDone:
			var d wire.Done
			if err := wire.Decode(body, &d); err != nil {
				return res, err
			}
			if fn == nil {
				res.Text, res.Tokens, res.PromptTokens, res.Logprobs = d.Text, d.Tokens, d.PromptTokens, d.Logprobs
				res.Reasoning = d.Reasoning
			}
			res.ToolCalls = d.ToolCalls
			res.FinishReason, res.Usage, res.Timings, res.Preemptions = d.FinishReason, d.Usage, d.Timings, d.Preemptions
			res.StopSequence, res.ResponseID = d.StopSequence, d.ResponseID
			if d.FinishReason == "error" {
				return res, &wire.Error{Code: d.Code, Message: d.Message}
			}
			return res, nil
		}
	}
}

// abandon cancels a request whose caller stopped listening; its remaining
// frames are dropped when they arrive.
func (c *Client) abandon(id uint64) {
	cid, _ := c.open()
	c.closeCall(cid) // the reply, if any, is dropped
	_ = c.write(&wire.Cancel{Type: wire.TypeCancel, ID: cid, Target: id})
}

// Stream runs req and yields its deltas; breaking out of the loop cancels
// the request. The final yield carries a nil error after the last delta, or
// the error that ended the stream.
func (c *Client) Stream(ctx context.Context, req Request) iter.Seq2[Delta, error] {
	return func(yield func(Delta, error) bool) {
		stop := errStop{}
		_, err := c.Generate(ctx, req, func(d Delta) error {
			if !yield(d, nil) {
				return stop
			}
			return nil
		})
		if err != nil && err != error(stop) {
			yield(Delta{}, err)
		}
	}
}

type errStop struct{}

func (errStop) Error() string { return "stream stopped by the caller" }
