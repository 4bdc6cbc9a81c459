package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestMoEModelServesAsADenseOne: a mixture of experts (models/arch2's
// qwen3moe) behind the daemon with n-gram speculation on: structured
// output validates, a named tool choice calls the tool with arguments
// that match its schema, embeddings come back finite and unit-length, a
// repeated prompt hits the prefix cache, and stats count the experts'
// work (every layer of every step, Used experts a token).
func TestMoEModelServesAsADenseOne(t *testing.T) {
	dir := testmodels.Dir(t)
	file := filepath.Join(dir, "arch2", "tiny-qwen3moe.gguf")
	cfg := fmt.Sprintf("[model]\nchat_template = %q\n[engine]\nspeculative = \"ngram\"\n",
		filepath.Join(dir, "chat", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"))
	td := startDaemonFlags(t, cfg, ServeFlags{Model: file, HTTPSocket: "http"})
	c := td.openai(t)
	ctx := context.Background()

	var schema map[string]any
	if err := json.Unmarshal([]byte(personSchema), &schema); err != nil {
		t.Fatal(err)
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Describe a person as JSON.")}
	for range 2 { // the second run of the same prompt reads the prefix cache
		resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-qwen3moe", Messages: msgs,
			MaxTokens: openai.Int(200), Temperature: openai.Float(0),
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: schema, Strict: openai.Bool(true)}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := jsonvalid.Validate([]byte(personSchema), []byte(resp.Choices[0].Message.Content)); err != nil {
			t.Errorf("json_schema: %q: %v", resp.Choices[0].Message.Content, err)
		}
	}

	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-qwen3moe",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Book a table.")}, Tools: sdkTools(),
		MaxTokens: openai.Int(300), Temperature: openai.Float(0), ParallelToolCalls: openai.Bool(false),
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "book"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if ch := resp.Choices[0]; ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) == 0 ||
		ch.Message.ToolCalls[0].Function.Name != "book" {
		t.Fatalf("named tool: %s %+v", ch.FinishReason, ch.Message.ToolCalls)
	} else if err := jsonvalid.Validate([]byte(schemaOf("book")), []byte(ch.Message.ToolCalls[0].Function.Arguments)); err != nil {
		t.Errorf("book(%s): %v", ch.Message.ToolCalls[0].Function.Arguments, err)
	}

	emb, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny-qwen3moe",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"the cat sat", "a mixture of experts"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range emb.Data {
		var norm float64
		for _, v := range d.Embedding {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("embedding %d: %v", i, v)
			}
			norm += v * v
		}
		if len(d.Embedding) == 0 || math.Abs(norm-1) > 1e-3 {
			t.Errorf("embedding %d: %d values, norm^2 %g", i, len(d.Embedding), norm)
		}
	}

	st, err := td.dial(t).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.PrefixHits == 0 || st.Steps == 0 || st.MoELayerPasses == 0 || st.MoEPairs < st.MoELayerPasses*2 ||
		st.MoETouched < st.MoELayerPasses || st.MoETouched > st.MoEPairs {
		t.Errorf("stats: prefix hits %d, steps %d, MoE passes %d, pairs %d, touched %d", st.PrefixHits, st.Steps,
			st.MoELayerPasses, st.MoEPairs, st.MoETouched)
	}
}
