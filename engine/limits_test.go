package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRequestListsAreCapped: 200k stop strings made every request on the
// daemon 50x slower, and 100k stop token ids were accepted; now each list
// and stop string length has a cap and the excess is a typed error.
func TestRequestListsAreCapped(t *testing.T) {
	m := loadModel(t, "synth")
	e := startEngine(t, m, engineOpts{})
	many := func(n int, s string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	for name, r := range map[string]Request{
		"stop strings":   {Prompt: "a", Stop: many(MaxStopStrings+1, "x")},
		"stop bytes":     {Prompt: "a", Stop: []string{strings.Repeat("x", MaxStopBytes+1)}},
		"stop token ids": {Prompt: "a", StopTokenIDs: make([]int, MaxStopTokenIDs+1)},
		"200k stops":     {Prompt: "a", Stop: many(200_000, "x")},
	} {
		if _, err := e.Submit(context.Background(), r); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want invalid argument", name, err)
		}
	}
	r := Request{Prompt: "a", MaxTokens: 2, Stop: many(MaxStopStrings, strings.Repeat("x", MaxStopBytes)),
		StopTokenIDs: make([]int, MaxStopTokenIDs)}
	st, err := e.Submit(context.Background(), r)
	if err != nil {
		t.Fatalf("at the caps: %v", err)
	}
	if _, _, done, err := st.Wait(context.Background()); err != nil || !done.Done {
		t.Fatalf("at the caps: %v %+v", err, done)
	}
}

// BenchmarkStopMatcherAtCaps prints what one token costs the step loop for a
// request at the caps: 32 stop strings of 128 bytes.
func BenchmarkStopMatcherAtCaps(b *testing.B) {
	stops := make([]string, MaxStopStrings)
	for i := range stops {
		stops[i] = strings.Repeat("ab", MaxStopBytes/2-1) + string(rune('A'+i))
	}
	m := stopMatcher{stops: stops}
	b.ReportAllocs()
	for b.Loop() {
		if _, stopped := m.feed("ab"); stopped {
			b.Fatal("stopped")
		}
	}
}
