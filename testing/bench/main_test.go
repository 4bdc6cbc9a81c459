package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// TestBenchJSON runs a small trace through two modes on the real test model
// and checks the JSON contract: every request completes in each mode, and
// the trace summary adds up to what the modes generated at most.
func TestBenchJSON(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"--model", testmodels.Path(t, "stories260K.gguf"), "--requests", "8", "--rate", "200",
		"--modes", "static,continuous", "--max-num-seqs", "4", "--json"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Modes map[string]modeResult `json:"modes"`
		Trace traceSummary          `json:"trace"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Trace.Requests != 8 || got.Trace.SpanS <= 0 || got.Trace.OfferedTokS <= 0 || got.Trace.PromptTokens == 0 {
		t.Fatalf("trace summary %+v", got.Trace)
	}
	for _, mode := range []string{"static", "continuous"} {
		r, ok := got.Modes[mode]
		if !ok || r.Completed != 8 || r.ThroughputTokS <= 0 || r.GeneratedTokens > got.Trace.MaxTokens {
			t.Fatalf("%s: %+v (trace %+v)", mode, r, got.Trace)
		}
	}
}
