package engine

import (
	"testing"
	"time"
)

// TestSpecGate: drafting pays while verifying B(1+k) tokens costs less
// than the tokens it keeps are worth; a memory-bound step (cost flat in
// tokens) pays, a compute-bound one (cost linear) does not unless nearly
// every draft is kept, and an unmeasured size is tried.
func TestSpecGate(t *testing.T) {
	var g specGate
	if !g.pays(4, 4) {
		t.Fatal("nothing measured: the gate should let drafting be tried")
	}
	ms := time.Millisecond
	for range 20 {
		g.noteStep(1, 30*ms) // memory-bound: 1 to 5 tokens cost about the same
		g.noteStep(5, 36*ms)
		g.noteStep(16, 60*ms) // compute-bound from here: linear in tokens
		g.noteStep(80, 300*ms)
		g.noteVerify(2)
	}
	if !g.pays(1, 4) {
		t.Errorf("batch 1: %v < %v x (1 + %v) should pay", g.cost[2], g.cost[0], g.gain)
	}
	if g.pays(16, 4) {
		t.Errorf("batch 16: %v vs %v x (1 + %v) should not pay", g.cost[6], g.cost[4], g.gain)
	}
	for range 60 {
		g.noteVerify(0)
	}
	tried := 0
	for range 64 {
		if g.pays(1, 4) {
			tried++
		}
	}
	if tried != 2 {
		t.Errorf("batch 1 with drafts all refused (gain %v): %d of 64 steps drafted, want 2 (every 32nd, to measure again)", g.gain, tried)
	}
}
