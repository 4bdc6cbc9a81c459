package engine

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/sample"
)

// TestGrammarDeadEndIsAnErrorAtAnyTemperature: a grammar whose next state
// is too ambiguous to follow ends the request with invalid_argument, greedy
// or sampled; it used to panic the process when sampled (a draw from an
// all -Inf row).
func TestGrammarDeadEndIsAnErrorAtAnyTemperature(t *testing.T) {
	m := loadModel(t, "synth")
	e := startEngine(t, m, engineOpts{})
	g, err := grammar.Parse(`root ::= "x" (("a"{0,8}){0,8}){0,8}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, temp := range []float32{0, 0.7, 1.5} {
		r := run(t, e, Request{Tokens: []int{1, 5, 9}, MaxTokens: 8, Grammar: g,
			Sampling: sample.Params{Temperature: temp, Seed: 3}})
		if r.done.Finish != FinishError || !errors.Is(r.done.Err, ErrInvalidArgument) || !errors.Is(r.done.Err, grammar.ErrTooComplex) {
			t.Errorf("temperature %v: finish %s, err %v; want an invalid-argument error for a grammar too complex", temp, r.done.Finish, r.done.Err)
		}
	}
	// The engine still serves.
	if r := run(t, e, Request{Tokens: []int{1, 5, 9}, MaxTokens: 4, IgnoreEOS: true}); len(r.tokens) != 4 {
		t.Errorf("after the errors: %d tokens, want 4", len(r.tokens))
	}
}

// faultyBackend wraps a backend: it panics when a sequence feeds it the
// poison token, and gives NaN logits for one that feeds it the nan token.
type faultyBackend struct {
	backend.Backend
	poison, nan int
	panics      atomic.Int32
}

func (f *faultyBackend) Forward(b *backend.Batch) ([][]float32, error) {
	for _, s := range b.Seqs {
		for _, tok := range s.Tokens {
			if tok == f.poison {
				f.panics.Add(1)
				panic("a kernel tripped over the poison token")
			}
		}
	}
	out, err := f.Backend.Forward(b)
	for i, s := range b.Seqs {
		if out != nil && out[i] != nil && s.Tokens[len(s.Tokens)-1] == f.nan {
			for j := range out[i] {
				out[i][j] = float32(math.NaN())
			}
		}
	}
	return out, err
}

// TestPanicsAndNaNsFailOneRequest: a forward pass that panics fails the
// requests of that step with an internal error, NaN logits fail theirs,
// and the engine serves the next request (it used to take the daemon down,
// or answer NaN logits with whatever token the draw fell on).
func TestPanicsAndNaNsFailOneRequest(t *testing.T) {
	m := loadModel(t, "synth")
	e := startEngine(t, m, engineOpts{})
	fb := &faultyBackend{Backend: e.backend, poison: 66, nan: 77}
	e.backend = fb
	for _, tc := range []struct {
		name string
		toks []int
		temp float32
	}{{"panic", []int{1, fb.poison}, 0}, {"nan greedy", []int{1, fb.nan}, 0}, {"nan sampled", []int{1, fb.nan}, 0.8}} {
		r := run(t, e, Request{Tokens: tc.toks, MaxTokens: 4, Sampling: sample.Params{Temperature: tc.temp, Seed: 1}})
		if r.done.Finish != FinishError || !errors.Is(r.done.Err, ErrInternal) {
			t.Errorf("%s: finish %s, err %v; want an internal error", tc.name, r.done.Finish, r.done.Err)
		}
		if len(r.tokens) != 0 {
			t.Errorf("%s: %d tokens came out", tc.name, len(r.tokens))
		}
	}
	if fb.panics.Load() == 0 {
		t.Fatal("the poison token never reached the backend")
	}
	if r := run(t, e, Request{Tokens: []int{1, 5, 9}, MaxTokens: 4, IgnoreEOS: true}); len(r.tokens) != 4 || r.done.Err != nil {
		t.Errorf("after the failures: %d tokens, err %v; want 4 and none", len(r.tokens), r.done.Err)
	}
	if _, err := e.Submit(context.Background(), Request{Tokens: []int{1}, MaxTokens: 1}); err != nil {
		t.Errorf("submit after the failures: %v", err)
	}
}
