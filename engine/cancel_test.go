package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestCancelReplyMatchesOutcome: a cancel that is answered yes ends the
// request "cancelled", a second cancel of the same request is not_found,
// and a cancel that races the request's own end never contradicts it. (It
// used to answer yes and then end "length"; a double cancel said yes twice.)
func TestCancelReplyMatchesOutcome(t *testing.T) {
	m := loadModel(t, "synth")
	e := startEngine(t, m, engineOpts{})
	ctx := context.Background()

	st, err := e.Submit(ctx, Request{Prompt: "a", MaxTokens: 200, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Cancel(st.ID()); err != nil {
		t.Fatal(err)
	}
	if err := e.Cancel(st.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second cancel: %v, want not found", err)
	}
	if _, _, done, _ := st.Wait(ctx); done.Finish != FinishCancelled {
		t.Fatalf("finish %s after an acknowledged cancel", done.Finish)
	}
	if err := e.Cancel(st.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel after the end: %v", err)
	}

	rng := rand.New(rand.NewPCG(1, 1))
	acked, missed := 0, 0
	for range 300 {
		st, err := e.Submit(ctx, Request{Prompt: "b", MaxTokens: 1 + rng.IntN(3), IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(400)) * time.Microsecond)
		cerr := e.Cancel(st.ID())
		_, _, done, _ := st.Wait(ctx)
		switch {
		case cerr == nil && done.Finish != FinishCancelled:
			t.Fatalf("cancel answered yes, request ended %s", done.Finish)
		case cerr != nil && !errors.Is(cerr, ErrNotFound):
			t.Fatalf("cancel: %v", cerr)
		case cerr != nil && done.Finish == FinishCancelled:
			t.Fatalf("cancel answered %v, request ended cancelled", cerr)
		case cerr == nil:
			acked++
		default:
			missed++
		}
	}
	t.Logf("of 300 racing cancels: %d took effect, %d came after the end", acked, missed)
}
