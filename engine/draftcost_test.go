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
	var g draftCost
	if !g.pays(4, 4, 16, 0) {
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
	if !g.pays(1, 1, 4, 0) {
		t.Errorf("batch 1: %v < %v x (1 + %v) should pay", g.cost[2], g.cost[0], g.gain)
	}
	if g.pays(16, 16, 64, 0) {
		t.Errorf("batch 16: %v vs %v x (1 + %v) should not pay", g.cost[6], g.cost[4], g.gain)
	}
	for range 60 {
		g.noteVerify(0)
	}
	tried := 0
	for range 64 {
		if g.pays(1, 1, 4, 0) {
			tried++
		}
	}
	if tried != 2 {
		t.Errorf("batch 1 with drafts all refused (gain %v): %d of 64 steps drafted, want 2 (every 32nd, to measure again)", g.gain, tried)
	}
}

// TestSpecGateWeighsTheDraftsMade: the gate judges the step the drafts in
// hand would make, not the longest the configuration allows: one drafted
// token that is usually kept pays where sixteen would not.
func TestSpecGateWeighsTheDraftsMade(t *testing.T) {
	var g draftCost
	ms := time.Millisecond
	for range 20 {
		g.noteStep(1, 30*ms)
		g.noteStep(2, 33*ms)
		g.noteStep(17, 200*ms)
		g.noteVerify(1)
	}
	if !g.pays(1, 1, 1, 0) {
		t.Errorf("one drafted token: %v < %v x (1 + %v) should pay", g.cost[1], g.cost[0], g.gain)
	}
	if g.pays(1, 1, 16, 0) {
		t.Errorf("sixteen drafted tokens: %v vs %v x (1 + %v) should not pay", g.cost[4], g.cost[0], g.gain)
	}
	// A draft model's passes count: two passes of 40 ms over one sequence
	// outweigh what one kept token is worth.
	g.noteDraft(1, 40*ms)
	if g.pays(1, 1, 1, 2) {
		t.Errorf("two draft passes of %v on top of %v should not pay for a gain of %v", g.draft[0], g.cost[1], g.gain)
	}
}

// TestSpecGateBacksOffDraftModelProbes: with drafts all refused, n-gram
// probes stay every 32nd step, and a draft model's (each a catch-up
// prefill in the draft) back off: 32, 64, 128, ... refused steps apart,
// up to 1024; a step that pays again resets them.
func TestSpecGateBacksOffDraftModelProbes(t *testing.T) {
	var g draftCost
	ms := time.Millisecond
	for range 20 {
		g.noteStep(1, 30*ms)
		g.noteStep(5, 36*ms)
		g.noteVerify(0)
	}
	g.noteDraft(1, 10*ms)
	var at []int
	for i := 1; i <= 3000; i++ {
		if g.pays(1, 1, 4, 4) {
			at = append(at, i)
		}
	}
	want := []int{32, 96, 224, 480, 992, 2016}
	if len(at) != len(want) {
		t.Fatalf("draft-model probes at steps %v, want %v", at, want)
	}
	for i := range want {
		if at[i] != want[i] {
			t.Fatalf("draft-model probes at steps %v, want %v", at, want)
		}
	}
	// Drafts kept again: the step pays, and the back-off starts over.
	for range 20 {
		g.noteVerify(4)
	}
	g.noteDraft(1, 1*ms)
	if !g.pays(1, 1, 4, 4) || g.probe != 0 {
		t.Fatalf("drafts kept again: the gate should open and reset its back-off (probe %d)", g.probe)
	}
	ngram := 0
	var h draftCost
	for range 20 {
		h.noteStep(1, 30*ms)
		h.noteStep(5, 36*ms)
		h.noteVerify(0)
	}
	for range 3200 {
		if h.pays(1, 1, 4, 0) {
			ngram++
		}
	}
	if ngram != 100 {
		t.Errorf("n-gram probes: %d in 3200 refused steps, want 100 (every 32nd)", ngram)
	}
}
