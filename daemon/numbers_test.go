package daemon

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
)

const boundedSchema = `{"type": "object", "properties": {
	"price": {"type": "number", "minimum": 0, "maximum": 1000},
	"ratio": {"type": "number", "exclusiveMinimum": -1, "exclusiveMaximum": 1, "multipleOf": 0.25},
	"qty": {"type": "integer", "minimum": 1}},
	"required": ["price", "ratio", "qty"], "additionalProperties": false}`

// TestNumberBoundsEverywhere: number bounds and multipleOf are enforced
// under response_format (strict, as every framework sends it), Ollama's
// format (which has no strict) and a tool's parameters (strict or not):
// "minimum" on a number was a 400 in strict mode and ignored for tools (a
// price of -704 came back). Sampled at several seeds so the random model
// writes many numbers; an independent validator judges each.
func TestNumberBoundsEverywhere(t *testing.T) {
	model := filepath.Join(testmodels.Dir(t), "arch", "tiny-qwen2.gguf")
	td := startDaemonFlags(t, "", ServeFlags{Model: model, HTTPSocket: "http"})
	oc, ol := td.openai(t), td.ollama(t)
	ctx := context.Background()
	var schema map[string]any
	if err := json.Unmarshal([]byte(boundedSchema), &schema); err != nil {
		t.Fatal(err)
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Price, ratio and quantity as JSON.")}
	for seed := range int64(4) {
		rf := openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "order", Schema: schema, Strict: openai.Bool(true)}}}
		resp, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-qwen2", Messages: msgs,
			MaxTokens: openai.Int(300), Temperature: openai.Float(1), Seed: openai.Int(seed), ResponseFormat: rf})
		if err != nil {
			t.Fatalf("response_format: %v", err)
		}
		if err := jsonvalid.Validate([]byte(boundedSchema), []byte(resp.Choices[0].Message.Content)); err != nil {
			t.Errorf("response_format, seed %d: %q: %v", seed, resp.Choices[0].Message.Content, err)
		}
		stream := false
		var got string
		if err := ol.Chat(ctx, &api.ChatRequest{Model: "tiny-qwen2", Messages: []api.Message{{Role: "user", Content: "An order."}},
			Format: json.RawMessage(boundedSchema), Stream: &stream,
			Options: map[string]any{"temperature": 1, "seed": seed, "num_predict": 300}}, func(r api.ChatResponse) error {
			got = r.Message.Content
			return nil
		}); err != nil {
			t.Fatalf("ollama format: %v", err)
		}
		if err := jsonvalid.Validate([]byte(boundedSchema), []byte(got)); err != nil {
			t.Errorf("ollama format, seed %d: %q: %v", seed, got, err)
		}
		for _, strict := range []bool{true, false} {
			tool := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "order", Parameters: schema, Strict: openai.Bool(strict)})
			resp, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-qwen2", Messages: msgs,
				MaxTokens: openai.Int(300), Temperature: openai.Float(1), Seed: openai.Int(seed),
				Tools: []openai.ChatCompletionToolUnionParam{tool},
				ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
					Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "order"}}}})
			if err != nil {
				t.Fatalf("tool (strict %v): %v", strict, err)
			}
			calls := resp.Choices[0].Message.ToolCalls
			if len(calls) == 0 {
				t.Fatalf("tool (strict %v), seed %d: no call (finish %s)", strict, seed, resp.Choices[0].FinishReason)
			}
			for _, c := range calls {
				if err := jsonvalid.Validate([]byte(boundedSchema), []byte(c.Function.Arguments)); err != nil {
					t.Errorf("tool arguments (strict %v), seed %d: %s: %v", strict, seed, c.Function.Arguments, err)
				}
			}
		}
	}
}
