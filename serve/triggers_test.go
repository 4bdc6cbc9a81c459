package serve

import (
	"testing"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/toolcall"
)

// TestTriggerBoundsAgree: toolcall keeps its plans within the engine's
// bound on lazy triggers by a constant of its own (it imports no engine).
func TestTriggerBoundsAgree(t *testing.T) {
	if toolcall.MaxTriggers != engine.MaxGrammarTriggers {
		t.Fatalf("toolcall.MaxTriggers %d, engine.MaxGrammarTriggers %d", toolcall.MaxTriggers, engine.MaxGrammarTriggers)
	}
}
