package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
	checkToolChoices(t, td.dial(t), nil)
}
