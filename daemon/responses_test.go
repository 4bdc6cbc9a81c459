package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
)

// respView is what the tests read of a response, from its JSON.
type respView struct {
	ID                string `json:"id"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Type, Text string
		} `json:"content"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func viewOf(t *testing.T, raw string) respView {
	t.Helper()
	var v respView
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v respView) text() string {
	var b strings.Builder
	for _, o := range v.Output {
		if o.Type == "message" {
			for _, c := range o.Content {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// streamResponse streams params and returns the event types in order, the
// text deltas together and the terminal event's response.
func streamResponse(t *testing.T, c openai.Client, p responses.ResponseNewParams, opts ...option.RequestOption) ([]string, string, respView) {
	t.Helper()
	s := c.Responses.NewStreaming(context.Background(), p, opts...)
	var types []string
	var text strings.Builder
	var final respView
	for n := int64(0); s.Next(); n++ {
		ev := s.Current()
		if ev.SequenceNumber != n {
			t.Fatalf("event %d (%s) has sequence number %d", n, ev.Type, ev.SequenceNumber)
		}
		types = append(types, ev.Type)
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
		if ev.Type == "response.completed" || ev.Type == "response.incomplete" {
			final = viewOf(t, ev.Response.RawJSON())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return types, text.String(), final
}

// TestResponsesOpenAISDK drives /v1/responses with the official OpenAI Go
// SDK: a text answer whole and streamed alike (the event sequence clients
// check, numbered), tool_choice required giving a function_call, the next
// turn through previous_response_id with its function_call_output, GET
// and DELETE of a stored response, store false keeping nothing, text.format
// held by the grammar, and refusals by name.
func TestResponsesOpenAISDK(t *testing.T) {
	td := startQwenChat(t, "")
	c := td.openai(t)
	ctx := context.Background()
	base := responses.ResponseNewParams{Model: "tiny-qwen2", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Count to ten.")},
		Instructions: openai.String("Be brief."), MaxOutputTokens: openai.Int(16), Temperature: openai.Float(0)}

	whole, err := c.Responses.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	w := viewOf(t, whole.RawJSON())
	if w.Status != "incomplete" || w.IncompleteDetails == nil || w.IncompleteDetails.Reason != "max_output_tokens" ||
		w.Usage.OutputTokens != 16 || whole.OutputText() != w.text() || !strings.HasPrefix(w.ID, "resp_") {
		t.Fatalf("response %s", whole.RawJSON())
	}
	types, text, final := streamResponse(t, c, base)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	if len(types) < 8 || strings.Join(types[:4], ",") != strings.Join(want, ",") ||
		strings.Join(types[len(types)-4:], ",") != "response.output_text.done,response.content_part.done,response.output_item.done,response.incomplete" {
		t.Errorf("events %v", types)
	}
	if text != w.text() || final.text() != w.text() {
		t.Errorf("streamed %q (final %q), whole %q", text, final.text(), w.text())
	}

	// A forced call, then the next turn with its output.
	tools := []responses.ToolUnionParam{}
	for _, tl := range acceptTools {
		var params map[string]any
		_ = json.Unmarshal([]byte(tl.schema), &params)
		tools = append(tools, responses.ToolParamOfFunction(tl.name, params, false))
	}
	withTools := base
	withTools.Tools, withTools.MaxOutputTokens = tools, openai.Int(400)
	withTools.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)}
	called, err := c.Responses.New(ctx, withTools)
	if err != nil {
		t.Fatal(err)
	}
	cv := viewOf(t, called.RawJSON())
	var call *struct{ name, id, args string }
	for _, o := range cv.Output {
		if o.Type == "function_call" {
			call = &struct{ name, id, args string }{o.Name, o.CallID, o.Arguments}
		}
	}
	if cv.Status != "completed" || call == nil || call.id == "" {
		t.Fatalf("required: %s", called.RawJSON())
	}
	if err := jsonvalid.Validate([]byte(schemaOf(call.name)), []byte(call.args)); err != nil {
		t.Errorf("%s(%s): %v", call.name, call.args, err)
	}
	types, _, sfinal := streamResponse(t, c, withTools)
	if !strings.Contains(strings.Join(types, ","), "response.function_call_arguments.delta") ||
		!strings.Contains(strings.Join(types, ","), "response.function_call_arguments.done") || len(sfinal.Output) == 0 ||
		sfinal.Output[len(sfinal.Output)-1].Arguments != call.args {
		t.Errorf("streamed call: %v %+v", types, sfinal.Output)
	}
	next := withTools // tools are the request's own, not carried over
	next.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsNone)}
	next.PreviousResponseID = openai.String(called.ID)
	next.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfFunctionCallOutput(`{"result": 5}`)}}
	next.Input.OfInputItemList[0].OfFunctionCallOutput.CallID = openai.String(call.id)
	next.MaxOutputTokens = openai.Int(4)
	second, err := c.Responses.New(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if sv := viewOf(t, second.RawJSON()); sv.Usage.InputTokens <= cv.Usage.InputTokens {
		t.Errorf("previous_response_id: %d prompt tokens, the first turn had %d", sv.Usage.InputTokens, cv.Usage.InputTokens)
	}
	got, err := c.Responses.Get(ctx, called.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != called.ID {
		t.Fatalf("get %v %v", got, err)
	}
	if err := c.Responses.Delete(ctx, called.ID); err != nil {
		t.Fatal(err)
	}
	var ae *openai.Error
	if _, err := c.Responses.Get(ctx, called.ID, responses.ResponseGetParams{}); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Errorf("get after delete: %v", err)
	}
	if _, err := c.Responses.New(ctx, next); !errors.As(err, &ae) || ae.StatusCode != 404 || !strings.Contains(ae.Message, "previous response") {
		t.Errorf("previous_response_id after delete: %v", err)
	}
	unstored := base
	unstored.Store = openai.Bool(false)
	u, err := c.Responses.New(ctx, unstored)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Responses.Get(ctx, u.ID, responses.ResponseGetParams{}); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Errorf("store false was kept: %v", err)
	}

	// Structured output.
	schema := `{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["n"]}`
	var sm map[string]any
	_ = json.Unmarshal([]byte(schema), &sm)
	p := base
	p.MaxOutputTokens = openai.Int(200)
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("n", sm)}
	js, err := c.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := jsonvalid.Validate([]byte(schema), []byte(js.OutputText())); err != nil {
		t.Errorf("text.format: %q: %v", js.OutputText(), err)
	}

	// A custom (freeform) tool: its input is text, held to its regex.
	ct := base
	ct.MaxOutputTokens = openai.Int(60)
	custom, err := c.Responses.New(ctx, ct, option.WithJSONSet("tools", []any{map[string]any{"type": "custom", "name": "shout",
		"description": "say it loud", "format": map[string]any{"type": "grammar", "syntax": "regex", "definition": "[A-Z]{2,8}!"}}}),
		option.WithJSONSet("tool_choice", map[string]any{"type": "custom", "name": "shout"}))
	if err != nil {
		t.Fatal(err)
	}
	var customView struct {
		Output []struct {
			Type, Name, Input string
			CallID            string `json:"call_id"`
		} `json:"output"`
	}
	_ = json.Unmarshal([]byte(custom.RawJSON()), &customView)
	if n := len(customView.Output); n == 0 || customView.Output[n-1].Type != "custom_tool_call" || customView.Output[n-1].Name != "shout" ||
		!regexp.MustCompile(`^[A-Z]{2,8}!$`).MatchString(customView.Output[n-1].Input) || customView.Output[n-1].CallID == "" {
		t.Errorf("custom tool: %s", custom.RawJSON())
	}
	cs := c.Responses.NewStreaming(ctx, ct, option.WithJSONSet("tools", []any{map[string]any{"type": "custom", "name": "shout",
		"format": map[string]any{"type": "grammar", "syntax": "regex", "definition": "[A-Z]{2,8}!"}}}),
		option.WithJSONSet("tool_choice", map[string]any{"type": "custom", "name": "shout"}))
	streamedInput := ""
	for cs.Next() {
		if ev := cs.Current(); ev.Type == "response.custom_tool_call_input.done" {
			streamedInput = ev.Input
		}
	}
	if cs.Err() != nil || len(customView.Output) > 0 && streamedInput != customView.Output[len(customView.Output)-1].Input {
		t.Errorf("streamed custom input %q (%v)", streamedInput, cs.Err())
	}

	for _, bad := range []struct {
		param string
		opt   option.RequestOption
	}{
		{"lark", option.WithJSONSet("tools", []any{map[string]any{"type": "custom", "name": "apply_patch",
			"format": map[string]any{"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}})},
		{"tools", option.WithJSONSet("tools", []any{map[string]any{"type": "web_search"}})},
		{"background", option.WithJSONSet("background", true)},
		{"reasoning.effort", option.WithJSONSet("reasoning", map[string]any{"effort": "extreme"})},
		{"input", option.WithJSONSet("input", []any{map[string]any{"type": "item_reference", "id": "x"}})},
	} {
		_, err := c.Responses.New(ctx, base, bad.opt)
		if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message+ae.Param, bad.param) {
			t.Errorf("%s: %v, want a 400 naming it", bad.param, err)
		}
	}
}

// TestResponsesReasoning: on a template whose prompt opens a <think> block
// (DeepSeek R1's), the thought is a reasoning item before the message,
// streamed as its content part's reasoning_text deltas, and counted as
// reasoning tokens.
func TestResponsesReasoning(t *testing.T) {
	dir := testmodels.Dir(t)
	cfg := fmt.Sprintf("[model]\nchat_template = %q\n", filepath.Join(dir, "chat", "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"))
	td := startDaemonFlags(t, cfg, ServeFlags{Model: filepath.Join(dir, "arch", "tiny-qwen2.gguf"), HTTPSocket: "http"})
	c := td.openai(t)
	p := responses.ResponseNewParams{Model: "tiny-qwen2", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Why is the sky blue?")},
		MaxOutputTokens: openai.Int(24), Temperature: openai.Float(1)} // greedy writes only newlines
	seed := option.WithJSONSet("seed", 7)
	whole, err := c.Responses.New(context.Background(), p, seed)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Output []struct {
			Type    string
			Content []struct{ Type, Text string }
		}
		Usage struct {
			Details struct {
				Reasoning int `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		}
	}
	_ = json.Unmarshal([]byte(whole.RawJSON()), &v)
	if len(v.Output) == 0 || v.Output[0].Type != "reasoning" || len(v.Output[0].Content) != 1 || v.Output[0].Content[0].Type != "reasoning_text" ||
		v.Output[0].Content[0].Text == "" || v.Usage.Details.Reasoning == 0 {
		t.Fatalf("reasoning: %s", whole.RawJSON())
	}
	types, _, _ := streamResponse(t, c, p, seed)
	want := "response.created,response.in_progress,response.output_item.added,response.content_part.added,response.reasoning_text.delta"
	if len(types) < 5 || strings.Join(types[:5], ",") != want {
		t.Errorf("events %v", types)
	}
}

// TestStoredConversationAcrossListeners: one store behind the socket and
// the HTTP API. A chat stored over msgpack (Store) is continued over
// /v1/responses by its id, whose prompt then holds the first turn and its
// answer; a response stored over HTTP is continued over msgpack; GET shows
// a socket-stored response's answer; an unknown id is not_found (another
// user's is too: ipc's TestResponseStore).
func TestStoredConversationAcrossListeners(t *testing.T) {
	td := startQwenChat(t, "")
	ctx := context.Background()
	mc, oc := td.dial(t), td.openai(t)
	turn := []client.Message{{Role: "user", Content: "Count to three."}}
	first, err := mc.Generate(ctx, client.Request{Messages: turn, MaxTokens: 6, Store: true}, nil)
	if err != nil || !strings.HasPrefix(first.ResponseID, "resp_") {
		t.Fatalf("stored over msgpack: %+v, %v", first, err)
	}
	params := responses.ResponseNewParams{Model: "tiny-qwen2", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Go on.")},
		MaxOutputTokens: openai.Int(4), Temperature: openai.Float(0)}
	alone, err := oc.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	params.PreviousResponseID = openai.String(first.ResponseID)
	cont, err := oc.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if cont.Usage.InputTokens <= alone.Usage.InputTokens+int64(first.Usage.CompletionTokens) {
		t.Errorf("continued over HTTP: %d input tokens, alone %d plus the first answer's %d", cont.Usage.InputTokens,
			alone.Usage.InputTokens, first.Usage.CompletionTokens)
	}
	back, err := mc.Generate(ctx, client.Request{Messages: []client.Message{{Role: "user", Content: "Go on."}}, MaxTokens: 4,
		PreviousResponseID: cont.ID}, nil)
	if err != nil || back.Usage.PromptTokens <= int(cont.Usage.InputTokens) {
		t.Errorf("continued over msgpack: %d prompt tokens (the HTTP turn had %d), %v", back.Usage.PromptTokens, cont.Usage.InputTokens, err)
	}
	got, err := oc.Responses.Get(ctx, first.ResponseID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != first.Text {
		t.Errorf("GET of a socket-stored response: %q, want %q (%v)", got.OutputText(), first.Text, err)
	}
	if _, err := mc.Generate(ctx, client.Request{Messages: turn, MaxTokens: 2, PreviousResponseID: "resp_nope"}, nil); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("an unknown id: %v", err)
	}
	if _, err := mc.Generate(ctx, client.Request{Prompt: "x", MaxTokens: 2, Store: true}, nil); !errors.Is(err, wire.ErrInvalidArgument) {
		t.Errorf("a prompt with store: %v", err)
	}
	td.waitIdle(t)
}
