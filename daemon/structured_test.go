package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

const personSchema = `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
	"age": {"type": "integer", "minimum": 0, "maximum": 120}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}},
	"required": ["name", "age"]}`

// TestStructuredOutputOpenAISDK: with the official OpenAI Go SDK, json_object
// and json_schema (strict) on chat and completions, streamed and not, give
// text that parses and validates (an independent validator), the streamed
// text equal to the whole; a keyword batchd cannot enforce is a 400 naming
// it, and with strict false it is ignored.
func TestStructuredOutputOpenAISDK(t *testing.T) {
	model := filepath.Join(testmodels.Dir(t), "arch", "tiny-qwen2.gguf")
	td := startDaemonFlags(t, "", ServeFlags{Model: model, HTTPSocket: "http"})
	c := td.openai(t)
	ctx := context.Background()
	var schema map[string]any
	if err := json.Unmarshal([]byte(personSchema), &schema); err != nil {
		t.Fatal(err)
	}
	jsonSchema := func(s map[string]any, strict bool) openai.ChatCompletionNewParamsResponseFormatUnion {
		return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: s, Strict: openai.Bool(strict)}}}
	}
	jsonObject := openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Describe a person as JSON.")}
	for _, tc := range []struct {
		name   string
		rf     openai.ChatCompletionNewParamsResponseFormatUnion
		schema string
	}{{"json_object", jsonObject, `{"type": "object"}`}, {"json_schema", jsonSchema(schema, true), personSchema}} {
		params := openai.ChatCompletionNewParams{Model: "tiny-qwen2", Messages: msgs, MaxTokens: openai.Int(200),
			Temperature: openai.Float(0), ResponseFormat: tc.rf}
		resp, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		whole := resp.Choices[0].Message.Content
		if resp.Choices[0].FinishReason != "stop" {
			t.Fatalf("%s: finish %s: %q", tc.name, resp.Choices[0].FinishReason, whole)
		}
		if err := jsonvalid.Validate([]byte(tc.schema), []byte(whole)); err != nil {
			t.Errorf("%s chat: %q: %v", tc.name, whole, err)
		}
		stream := c.Chat.Completions.NewStreaming(ctx, params)
		var streamed strings.Builder
		for stream.Next() {
			if ch := stream.Current().Choices; len(ch) > 0 {
				streamed.WriteString(ch[0].Delta.Content)
			}
		}
		if err := stream.Err(); err != nil || streamed.String() != whole {
			t.Errorf("%s streamed: %q (%v), want %q", tc.name, streamed.String(), err, whole)
		}
		// Completions take response_format too (as llama.cpp's and vLLM's do).
		comp, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny-qwen2",
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("A person as JSON:")}, MaxTokens: openai.Int(200),
			Temperature: openai.Float(0)}, option.WithJSONSet("response_format", tc.rf))
		if err != nil {
			t.Fatalf("%s completions: %v", tc.name, err)
		}
		cs := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: "tiny-qwen2",
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("A person as JSON:")}, MaxTokens: openai.Int(200),
			Temperature: openai.Float(0)}, option.WithJSONSet("response_format", tc.rf))
		var cstreamed strings.Builder
		for cs.Next() {
			if ch := cs.Current().Choices; len(ch) > 0 {
				cstreamed.WriteString(ch[0].Text)
			}
		}
		if err := cs.Err(); err != nil || cstreamed.String() != comp.Choices[0].Text {
			t.Errorf("%s completions streamed: %q (%v), want %q", tc.name, cstreamed.String(), err, comp.Choices[0].Text)
		}
		// Any JSON object may go on past max_tokens on a random model.
		if ch := comp.Choices[0]; ch.FinishReason != "length" {
			if err := jsonvalid.Validate([]byte(tc.schema), []byte(ch.Text)); err != nil {
				t.Errorf("%s completions: %q: %v", tc.name, ch.Text, err)
			}
		} else if tc.name == "json_schema" {
			t.Errorf("json_schema completions ran to max_tokens: %q", ch.Text)
		}
	}
	// uniqueItems cannot be enforced: strict refuses it by name, strict false ignores it.
	unique := map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "uniqueItems": true, "maxItems": 3}
	_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-qwen2", Messages: msgs, MaxTokens: openai.Int(20),
		ResponseFormat: jsonSchema(unique, true)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "uniqueItems") {
		t.Errorf("strict uniqueItems: %v, want a 400 naming it", err)
	}
	if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-qwen2", Messages: msgs,
		MaxTokens: openai.Int(20), ResponseFormat: jsonSchema(unique, false)}); err != nil {
		t.Errorf("uniqueItems with strict false: %v", err)
	}
}

// TestStructuredOverMsgpack: the socket's submit takes a grammar, a JSON
// Schema (a msgpack map, key order kept), json_object, regex and choice;
// a grammar that does not parse names its line and column, two kinds at
// once are refused, and batchd grammar prints what a schema becomes.
func TestStructuredOverMsgpack(t *testing.T) {
	td := startSynthDaemon(t, "")
	c := td.dial(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		r    client.Request
		ok   func(string) bool
	}{
		{"grammar", client.Request{Grammar: `root ::= "a" [0-9]{2}`}, func(s string) bool { return len(s) == 3 && s[0] == 'a' }},
		{"schema", client.Request{JSONSchema: json.RawMessage(`{"type":"object","properties":{"b":{"type":"boolean"}},"required":["b"]}`)},
			func(s string) bool {
				return jsonvalid.Validate([]byte(`{"required":["b"],"properties":{"b":{"type":"boolean"}}}`), []byte(s)) == nil
			}},
		{"regex", client.Request{Regex: `[xy]{3}`}, func(s string) bool { return len(s) == 3 && strings.Trim(s, "xy") == "" }},
		{"choice", client.Request{Choice: []string{"left", "right"}}, func(s string) bool { return s == "left" || s == "right" }},
	} {
		tc.r.Prompt, tc.r.MaxTokens, tc.r.Temperature = "q", 64, 1
		res, err := c.Generate(ctx, tc.r, nil)
		if err != nil || res.FinishReason != "stop" || !tc.ok(res.Text) {
			t.Errorf("%s: %q, finish %v, %v", tc.name, res.Text, res.FinishReason, err)
		}
	}
	for _, tc := range []struct {
		r    client.Request
		want string
	}{
		{client.Request{Grammar: "root ::= \"a\"\nb ::= ("}, "line 2"},
		{client.Request{Grammar: `root ::= "a"`, Regex: "a"}, "only one"},
		{client.Request{JSONSchema: json.RawMessage(`{"type":"string","format":"email"}`)}, "email"},
	} {
		tc.r.Prompt, tc.r.MaxTokens = "q", 4
		_, err := c.Generate(ctx, tc.r, nil)
		if !errors.Is(err, wire.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want invalid_argument with %q", tc.r, err, tc.want)
		}
	}
}

// TestCapSlotFreeWhenTheAnswerArrives: under max_requests_per_user = 1, a
// client that submits again the moment its answer arrived is served: the
// slot was given back before the terminal frame (msgpack) or the last
// bytes (HTTP) went out. The next request was refused now and then.
func TestCapSlotFreeWhenTheAnswerArrives(t *testing.T) {
	td := startDaemonFlags(t, "[server]\nmax_requests_per_user = 1\n", ServeFlags{Model: synth.TinyFile(t, 256), HTTPSocket: "http"})
	c := td.dial(t)
	hc := unixHTTPClient(td.d.cfg.Server.HTTPSocket)
	for i := range 40 {
		if _, err := c.Generate(context.Background(), client.Request{Prompt: "a", MaxTokens: 1}, nil); err != nil {
			t.Fatalf("msgpack request %d: %v", i, err)
		}
		resp, err := hc.Post("http://batchd/v1/completions", "application/json", strings.NewReader(`{"prompt":"a","max_tokens":1}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("HTTP request %d: %s", i, resp.Status)
		}
	}
}
