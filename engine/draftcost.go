package engine

import (
	"math/bits"
	"time"
)

// draftCost decides whether drafting pays at the present batch, from what
// the engine measures: the forward time of decode-only steps by their token
// count (power-of-two buckets, smoothed) and the tokens a verification
// keeps on average. Drafting k tokens for each of B sequences turns a step
// of B tokens into one of B(1+k) that yields B(1+E); it pays while
// T(B(1+k)) < (1+E) T(B), plus k passes of a draft model's when one
// drafts. k is what this step's drafts hold (each request's draft length
// follows what it kept), not the configured most. A bucket never measured counts as paying, so the
// engine finds out; memory-bound small batches pay, compute-bound large
// ones stop.
type draftCost struct {
	cost [12]float64 // seconds per decode-only step of 2^i..2^(i+1)-1 tokens; 0: not measured
	// draft: seconds per draft-model pass over 2^i..2^(i+1)-1 sequences
	// (Method "draft"; a step drafting k tokens makes k passes).
	draft [12]float64
	gain  float64 // tokens kept per verification, smoothed (from gainPrior)
	shut  int     // steps refused in a row; every 32nd is let through to measure again
	// probe: refused steps before a draft model's next probe (0: probeEvery).
	probe int
	seen  bool // gain has been measured; before, gainPrior stands
}

// noteStep records a decode-only step's forward time.
func (g *draftCost) noteStep(tokens int, fwd time.Duration) { smooth(&g.cost, tokens, fwd) }

// noteDraft records a draft-model pass over seqs sequences.
func (g *draftCost) noteDraft(seqs int, fwd time.Duration) { smooth(&g.draft, seqs, fwd) }

func smooth(t *[12]float64, n int, d time.Duration) {
	if n <= 0 || d <= 0 {
		return
	}
	i := min(bits.Len(uint(n))-1, len(t)-1)
	if t[i] == 0 {
		t[i] = d.Seconds()
		return
	}
	t[i] = 0.9*t[i] + 0.1*d.Seconds()
}

// gainPrior is the gain assumed before any verification: two tokens kept.
// The gain moves fast (a third of the way to each new figure): a gate that
// closes on a pessimistic estimate verifies too rarely to correct it.
const gainPrior = 2

// noteVerify records how many drafted tokens a verification kept.
func (g *draftCost) noteVerify(kept int) {
	if !g.seen {
		g.gain, g.seen = gainPrior, true
	}
	g.gain = 0.7*g.gain + 0.3*float64(kept)
}

// pays reports whether a step of b decoding sequences, of which n carry
// drafts of d tokens in all (passes draft-model passes to make them), is
// worth it: the step costs T(b+d) plus the passes and yields about b + n
// times the gain, against b tokens for T(b). A step it refuses now and
// then goes through anyway, so that a gain that has changed (the text
// began to repeat) is seen: every 32nd for n-gram drafts, ever more rarely
// for a draft model's.
func (g *draftCost) pays(b, n, d, passes int) bool {
	if b <= 0 || n <= 0 {
		return true
	}
	at := func(t *[12]float64, n int) float64 { return t[min(bits.Len(uint(n))-1, len(t)-1)] }
	plain, spec := at(&g.cost, b), at(&g.cost, b+d)
	if spec > 0 {
		spec += float64(passes) * at(&g.draft, n) // 0 for n-gram drafts, or before a pass is timed
	}
	gain := g.gain
	if !g.seen {
		gain = gainPrior
	}
	if plain == 0 || spec == 0 || spec*float64(b) < (float64(b)+float64(n)*gain)*plain {
		g.shut, g.probe = 0, 0
		return true
	}
	g.shut++
	if passes == 0 {
		return g.shut%probeEvery == 0
	}
	// A draft model's probe also costs its catch-up (a prefill of every
	// token since it last drafted, the prompt for a new request), so each
	// probe that does not reopen the gate doubles the wait for the next.
	if g.probe == 0 {
		g.probe = probeEvery
	}
	if g.shut < g.probe {
		return false
	}
	g.shut, g.probe = 0, min(2*g.probe, probeMost)
	return true
}

// probeEvery is how many refused steps the gate lets through one to
// measure again; probeMost the longest a draft model's probes back off to.
const (
	probeEvery = 32
	probeMost  = 1024
)
