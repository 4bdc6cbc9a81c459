package sched

import (
	"testing"
	"time"
)

func TestControllerMoves(t *testing.T) {
	cfg := ControllerConfig{MinSeqs: 2, MaxSeqs: 64, MinTokens: 64, MaxTokens: 1024,
		TTFTTarget: time.Second, ITLTarget: 100 * time.Millisecond, Cooldown: 5 * time.Second}
	now := t0
	at := func(d time.Duration) time.Time { now = now.Add(d); return now }
	type step struct {
		o          Observation
		seqs, toks int
		level      LoadLevel
		changed    bool
	}
	c := NewController(cfg, 16, 512)
	steps := []step{
		// Idle: nothing moves.
		{Observation{Now: at(0)}, 16, 512, LoadIdle, false},
		// A queue builds under heavy utilization with latency to spare: grow.
		{Observation{Now: at(time.Second), Queue: 10, Running: 16, Utilization: 0.95, P95TTFT: 300 * time.Millisecond}, 20, 640, LoadHigh, true},
		// Still high, but inside the cooldown: hold.
		{Observation{Now: at(time.Second), Queue: 10, Running: 20, Utilization: 0.95, P95TTFT: 300 * time.Millisecond}, 20, 640, LoadHigh, false},
		// After the cooldown: grow again.
		{Observation{Now: at(5 * time.Second), Queue: 10, Running: 20, Utilization: 0.95, P95TTFT: 300 * time.Millisecond}, 25, 800, LoadHigh, true},
		// Latency breaches the ITL target: shrink at once, cooldown or not.
		{Observation{Now: at(time.Second), Queue: 10, Running: 25, Utilization: 0.95, P95ITL: 150 * time.Millisecond}, 18, 600, LoadCritical, true},
		// Hysteresis: latency back under target but not under 70% of it: no growth.
		{Observation{Now: at(10 * time.Second), Queue: 5, Running: 18, Utilization: 0.9, P95ITL: 80 * time.Millisecond}, 18, 600, LoadHigh, false},
		// A sudden load step: jump straight to what the queue needs.
		{Observation{Now: at(time.Second), Queue: 40, Running: 18, Utilization: 0.9, P95ITL: 20 * time.Millisecond}, 58, 1024, LoadHigh, true},
		// Never past the hard limits.
		{Observation{Now: at(time.Second), Queue: 500, Running: 58, Utilization: 0.9}, 64, 1024, LoadHigh, true},
	}
	for i, s := range steps {
		d, changed := c.Observe(s.o)
		if d.Seqs != s.seqs || d.Tokens != s.toks || d.Level != s.level || changed != s.changed {
			t.Fatalf("step %d: got %d/%d %s changed=%v, want %d/%d %s changed=%v (%s)", i, d.Seqs, d.Tokens, d.Level,
				changed, s.seqs, s.toks, s.level, s.changed, d.Reason)
		}
	}
	if st := c.State(); st.Moves != 5 || st.LastDecision == "" {
		t.Fatalf("state %+v", st)
	}
}

func TestControllerShrinksToFloorNotBelow(t *testing.T) {
	c := NewController(ControllerConfig{MinSeqs: 4, MaxSeqs: 8, MinTokens: 100, MaxTokens: 200, TTFTTarget: time.Millisecond}, 8, 200)
	for i := range 20 {
		c.Observe(Observation{Now: t0.Add(time.Duration(i) * time.Second), P95TTFT: time.Second})
	}
	if s, tk := c.Limits(); s != 4 || tk != 100 {
		t.Fatalf("floor %d/%d", s, tk)
	}
}
