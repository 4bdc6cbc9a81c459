package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/jsontext"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/serve"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/toolcall"
)

// TestGemma4ToolCalls: a tiny Gemma 4 (26B-A4B's layout) under Gemma 4's
// own template speaks its <|tool_call>call:NAME{...} syntax: with
// tool_choice required or named, greedy and at temperature 1, each answer
// is a call whose arguments (read from Gemma's syntax into JSON) validate
// against its schema, nested objects and arrays included; the calls stream
// as deltas that add up to the final ones; and a round trip (the call and
// its result sent back, arguments as JSON text) renders.
func TestGemma4ToolCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gemma4.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = synth.WriteGemma4(f, synth.Gemma4Options{Dim: 128, Layers: 6, Heads: 4, FFN: 256, Vocab: 512, Context: 2048, Window: 16,
		HeadSWA: 32, HeadFull: 64, KVSWA: 2, KVFull: 1, Slide: []bool{true, false, true, false, true, false}, KEqV: true,
		Experts: 8, Used: 2, ExpertFFN: 64, FusedGateUp: true, Softcap: 30, DType: quant.Q8_0, Seed: 3})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := filepath.Abs("../chat/testdata/gemma4/gemma-4-31B-it.jinja")
	td := startDaemonFlags(t, fmt.Sprintf("[model]\nchat_template = %q\n", tmpl), ServeFlags{Model: path})
	if got := toolcall.Format(serve.ModelInfo(td.d.defaultModel()).ToolFormat); got != toolcall.Gemma4 {
		t.Fatalf("format %s, want %s", got, toolcall.Gemma4)
	}
	var tools []map[string]any
	for _, tl := range qwen35Tools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": tl.name, "parameters": json.RawMessage(tl.schema)}})
	}
	toolsJSON, _ := json.Marshal(tools)
	cl := td.dial(t)
	msgs := []client.Message{{Role: "user", Content: "Add 2 and 3, then book a night for Ana."}}
	for _, choice := range []string{"required", "set_mode", "book", "add"} {
		for _, temp := range []float32{0, 1} {
			req := client.Request{Messages: msgs, Tools: toolsJSON, ToolChoice: choice, MaxTokens: 512, Temperature: temp, Seed: 11}
			streamed := map[int]*wire.ToolCall{}
			res, err := cl.Generate(context.Background(), req, func(ev client.Delta) error {
				for _, d := range ev.ToolCalls {
					c := streamed[d.Index]
					if c == nil {
						c = &wire.ToolCall{ID: d.ID, Name: d.Name}
						streamed[d.Index] = c
					}
					c.Arguments += d.Arguments
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s at %v: %v", choice, temp, err)
			}
			if res.FinishReason != "tool_calls" || len(res.ToolCalls) == 0 {
				t.Fatalf("%s at %v: finish %s, calls %v, text %q", choice, temp, res.FinishReason, res.ToolCalls, res.Text)
			}
			for i, call := range res.ToolCalls {
				if s := streamed[i]; s == nil || *s != call {
					t.Errorf("%s at %v: call %d streamed as %+v, final %+v", choice, temp, i, s, call)
				}
				checkCall(t, qwen35Tools, choice, temp, call)
				if v, err := jsontext.Parse([]byte(call.Arguments)); err != nil || len(v.Members) != len(uniqueKeys(v)) {
					t.Errorf("%s at %v: %s(%s): an argument twice", choice, temp, call.Name, call.Arguments)
				}
			}
		}
	}
	round := append(msgs, client.Message{Role: "assistant", Extra: map[string]any{"tool_calls": json.RawMessage(
		`[{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]`)}},
		client.Message{Role: "tool", Content: "5", Extra: map[string]any{"tool_call_id": "c1"}})
	res, err := cl.Generate(context.Background(), client.Request{Messages: round, Tools: toolsJSON, MaxTokens: 8}, nil)
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	if res.Usage.PromptTokens == 0 || res.FinishReason == "" {
		t.Fatalf("round trip: %+v", res)
	}
}
