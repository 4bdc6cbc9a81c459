package engine

import (
	"math/bits"
	"time"
)

// specGate decides whether drafting pays at the present batch, from what
// the engine measures: the forward time of decode-only steps by their token
// count (power-of-two buckets, smoothed) and the tokens a verification
// keeps on average. Drafting for B sequences turns a step of B tokens into
// one of about B(1+k) that yields B(1+E); it pays while
// T(B(1+k)) < (1+E) T(B). A bucket never measured counts as paying, so the
// engine finds out; memory-bound small batches pay, compute-bound large
// ones stop.
type specGate struct {
	cost [12]float64 // seconds per decode-only step of 2^i..2^(i+1)-1 tokens; 0: not measured
	gain float64     // tokens kept per verification, smoothed (from gainPrior)
	shut int         // steps refused in a row; every 32nd is let through to measure again
	seen bool        // gain has been measured; before, gainPrior stands
}

// noteStep records a decode-only step's forward time.
func (g *specGate) noteStep(tokens int, fwd time.Duration) {
	if tokens <= 0 || fwd <= 0 {
		return
	}
	i := min(bits.Len(uint(tokens))-1, len(g.cost)-1)
	if g.cost[i] == 0 {
		g.cost[i] = fwd.Seconds()
		return
	}
	g.cost[i] = 0.9*g.cost[i] + 0.1*fwd.Seconds()
}

// gainPrior is the gain assumed before any verification: two tokens kept.
// The gain moves fast (a third of the way to each new figure): a gate that
// closes on a pessimistic estimate verifies too rarely to correct it.
const gainPrior = 2

// noteVerify records how many drafted tokens a verification kept.
func (g *specGate) noteVerify(kept int) {
	if !g.seen {
		g.gain, g.seen = gainPrior, true
	}
	g.gain = 0.7*g.gain + 0.3*float64(kept)
}

// pays reports whether b sequences drafting k tokens each is worth it. A
// step it refuses now and then goes through anyway, so that a gain that
// has changed (the text began to repeat) is seen.
func (g *specGate) pays(b, k int) bool {
	if b <= 0 {
		return true
	}
	at := func(n int) float64 { return g.cost[min(bits.Len(uint(n))-1, len(g.cost)-1)] }
	plain, spec := at(b), at(b*(1+k))
	gain := g.gain
	if !g.seen {
		gain = gainPrior
	}
	if plain == 0 || spec == 0 || spec < (1+gain)*plain {
		g.shut = 0
		return true
	}
	g.shut++
	return g.shut%32 == 0
}
