package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Params choose the next token from logits. The zero value is greedy.
type Params struct {
	Temperature       float32 // 0 = greedy (argmax, lowest id on a tie)
	TopK              int     // keep the k most likely; 0 = off
	TopP              float32 // keep the smallest set with this much mass; 0 or 1 = off
	MinP              float32 // drop tokens below MinP x the top probability; 0 = off
	RepetitionPenalty float32 // >1 discourages tokens already seen (CTRL-style); 0 or 1 = off
	Seed              uint64  // RNG seed; same seed, prompt and model give the same tokens
	// FrequencyPenalty and PresencePenalty lower the logit of each token
	// the request has generated so far, by count x FrequencyPenalty plus
	// PresencePenalty once (OpenAI's definition; the prompt does not count,
	// as in vLLM). Range [-2, 2]; 0 = off.
	FrequencyPenalty, PresencePenalty float32
}

// Bounds of the sampling values. Outside them the arithmetic gives garbage
// (1/T infinite below MinTemperature: NaN probabilities; above
// MaxTemperature the draw is near uniform), so they are rejected rather than
// clamped. vLLM raises temperatures below 0.01 to 0.01; llama.cpp's ranges
// for top_k, top_p, min_p and repeat_penalty are the same as these.
const (
	MinTemperature       = 0.01 // smallest non-zero temperature; 0 is greedy
	MaxTemperature       = 10
	MaxTopK              = 1 << 20
	MinRepetitionPenalty = 0.01 // smallest non-zero penalty; 0 is off
	MaxRepetitionPenalty = 10
	MaxPenalty           = 2 // |frequency_penalty| and |presence_penalty|, as OpenAI
)

// Validate reports parameters outside their ranges, each by its wire name.
func (p Params) Validate() error {
	finite := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	var errs []error
	if t := p.Temperature; !finite(t) || t < 0 || (t > 0 && t < MinTemperature) || t > MaxTemperature {
		errs = append(errs, fmt.Errorf("temperature %v: want 0 (greedy) or a value in [%v, %v]", t, MinTemperature, MaxTemperature))
	}
	if p.TopK < 0 || p.TopK > MaxTopK {
		errs = append(errs, fmt.Errorf("top_k %d: want 0 (off) to %d", p.TopK, MaxTopK))
	}
	if !finite(p.TopP) || p.TopP < 0 || p.TopP > 1 {
		errs = append(errs, fmt.Errorf("top_p %v: want a value in [0, 1]", p.TopP))
	}
	if !finite(p.MinP) || p.MinP < 0 || p.MinP > 1 {
		errs = append(errs, fmt.Errorf("min_p %v: want a value in [0, 1]", p.MinP))
	}
	if r := p.RepetitionPenalty; !finite(r) || r < 0 || (r > 0 && r < MinRepetitionPenalty) || r > MaxRepetitionPenalty {
		errs = append(errs, fmt.Errorf("repetition_penalty %v: want 0 (off) or a value in [%v, %v]", r,
			MinRepetitionPenalty, MaxRepetitionPenalty))
	}
	for _, f := range []struct {
		name string
		v    float32
	}{{"frequency_penalty", p.FrequencyPenalty}, {"presence_penalty", p.PresencePenalty}} {
		if !finite(f.v) || f.v < -MaxPenalty || f.v > MaxPenalty {
			errs = append(errs, fmt.Errorf("%s %v: want a value in [-%d, %d]", f.name, f.v, MaxPenalty, MaxPenalty))
		}
	}
	return errors.Join(errs...)
}

// Sampler draws tokens for one sequence with its own seeded RNG, so that the
// draw does not depend on what else is in the batch.
type Sampler struct {
	p    Params
	rng  *rand.Rand
	cand []candidate
	// seen marks the tokens penalized in this call: seen[id] == stamp.
	seen  []uint32
	stamp uint32
	// PromptLen is where the generated tokens start in history, for the
	// frequency and presence penalties.
	PromptLen int
	counts    []int32 // per token, of the generated ones; reset after each call
}

type candidate struct {
	id int
	p  float32
}

// NewSampler returns a sampler for params.
func New(p Params) *Sampler {
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))}
}

// Sample picks the next token. history (prompt and output so far) feeds the
// repetition penalty. logits are modified in place.
func (s *Sampler) Sample(logits []float32, history []int) int {
	s.Penalize(logits, history)
	return s.Draw(logits)
}

// Greedy reports whether Draw takes the argmax.
func (s *Sampler) Greedy() bool { return s.p.Temperature == 0 }

// Penalize applies the repetition, frequency and presence penalties to
// logits in place (Sample's first half).
func (s *Sampler) Penalize(logits []float32, history []int) {
	if rp := s.p.RepetitionPenalty; rp > 0 && rp != 1 {
		s.penalize(logits, history, rp)
	}
	if s.p.FrequencyPenalty != 0 || s.p.PresencePenalty != 0 {
		s.penalizeOutput(logits, history[min(s.PromptLen, len(history)):])
	}
}

// Draw picks a token from penalized logits: the argmax when greedy, else
// a draw after temperature, top-k, min-p and top-p (Sample's second half).
// A logit of -Inf is never drawn while another is finite. When none is
// (every token masked, or the row is not finite), Draw returns Argmax's
// pick without drawing, and the caller finds that token's logit is not a
// number it can use (NonFinite).
func (s *Sampler) Draw(logits []float32) int {
	if s.p.Temperature == 0 {
		return Argmax(logits)
	}
	c, sorted, total := s.dist(logits)
	if len(c) == 0 || !(total > 0) || math.IsInf(float64(total), 0) {
		return Argmax(logits)
	}
	return pick(c, sorted, s.rng.Float32()*total)
}

// NonFinite reports whether a logit cannot have been a real choice: NaN
// or an infinity (every token masked, or a forward pass gone wrong).
func NonFinite(l float32) bool { return l != l || math.IsInf(float64(l), 0) }

// Verify decides a drafted token that a draft proposed with certainty (an
// n-gram): it draws as Draw does and keeps the draft when the draw is it.
// That is speculative sampling's rejection rule for such a draft (keep it
// with probability p(tok), else draw from p without tok), taken as the
// coupling that spends the same random numbers as Draw: the request's
// tokens are the ones it would draw without speculation, seed for seed,
// so batching (which decides whether a sequence drafts) stays invisible.
func (s *Sampler) Verify(logits []float32, tok int) (got int, kept bool) {
	got = s.Draw(logits)
	return got, got == tok
}

// dist is Draw's distribution over candidates (probabilities summing to
// total, in byProb order when sorted).
func (s *Sampler) dist(logits []float32) ([]candidate, bool, float32) {
	inv := 1 / s.p.Temperature
	mx := logits[Argmax(logits)]
	s.cand = s.cand[:0]
	var sum float32
	negInf := float32(math.Inf(-1))
	for id, l := range logits {
		if l == negInf {
			continue
		}
		p := float32(math.Exp(float64((l - mx) * inv)))
		if p == 0 { // under the grammar's -Inf, or too unlikely to matter: never drawn
			continue
		}
		sum += p
		s.cand = append(s.cand, candidate{id, p})
	}
	c := s.cand
	for i := range c {
		c[i].p /= sum
	}
	c, sorted := s.filter(c)
	var total float32
	for _, x := range c {
		total += x.p
	}
	return c, sorted, total
}

// pick returns the candidate at mass r.
func pick(c []candidate, sorted bool, r float32) int {
	if !sorted {
		return drawUnsorted(c, r)
	}
	for _, x := range c {
		r -= x.p
		if r < 0 {
			return x.id
		}
	}
	return c[len(c)-1].id
}

// filter applies top-k, min-p and top-p (llama.cpp's order) to the
// candidates; they need them by probability (id breaking ties, so the draw
// is reproducible), and only as many as they look at are sorted. sorted
// says whether the result is in that order.
func (s *Sampler) filter(c []candidate) ([]candidate, bool) {
	sorted := false
	if k := s.p.TopK; k > 0 && k < len(c) {
		selectTop(c, k)
		c = c[:k]
		slices.SortFunc(c, byProb)
		sorted = true
	}
	if mp := s.p.MinP; mp > 0 {
		top := c[0].p
		if !sorted {
			for _, x := range c {
				top = max(top, x.p)
			}
		}
		cut := top * mp
		n := 0
		for _, x := range c {
			if x.p >= cut {
				c[n] = x
				n++
			}
		}
		c = c[:n]
	}
	if tp := s.p.TopP; tp > 0 && tp < 1 {
		if !sorted {
			slices.SortFunc(c, byProb)
			sorted = true
		}
		var cum float32
		n := 0
		for n < len(c) {
			cum += c[n].p
			n++
			if cum >= tp {
				break
			}
		}
		c = c[:n]
	}
	return c, sorted
}

// byProb orders candidates by probability, the lower id first on a tie.
func byProb(a, b candidate) int {
	switch {
	case a.p > b.p:
		return -1
	case a.p < b.p:
		return 1
	}
	return a.id - b.id
}

// selectTop moves the k first candidates by byProb to c[:k] (in no order).
func selectTop(c []candidate, k int) {
	lo, hi := 0, len(c)
	for hi-lo > 1 {
		i := partition(c, lo, hi)
		switch {
		case i == k:
			return
		case i < k:
			lo = i + 1
		default:
			hi = i
		}
	}
}

// partition puts c[lo:hi] around a pivot by byProb (the middle one) and
// returns where the pivot ends.
func partition(c []candidate, lo, hi int) int {
	m := lo + (hi-lo)/2
	c[m], c[hi-1] = c[hi-1], c[m]
	pv := c[hi-1]
	i := lo
	for j := lo; j < hi-1; j++ {
		if byProb(c[j], pv) < 0 {
			c[i], c[j] = c[j], c[i]
			i++
		}
	}
	c[i], c[hi-1] = c[hi-1], c[i]
	return i
}

// drawUnsorted returns the candidate at mass r in byProb order without
// sorting: it partitions around a pivot and goes down the side r falls
// in (expected linear time).
func drawUnsorted(c []candidate, r float32) int {
	lo, hi := 0, len(c)
	for hi-lo > 1 {
		i := partition(c, lo, hi)
		var before float32
		for _, x := range c[lo:i] {
			before += x.p
		}
		switch {
		case r < before:
			hi = i
		case r < before+c[i].p || i == hi-1:
			return c[i].id
		default:
			r -= before + c[i].p
			lo = i + 1
		}
	}
	return c[lo].id
}

// penalize applies the repetition penalty once per distinct token in
// history, as llama.cpp and Hugging Face do: a token seen three times is
// divided by rp, not rp cubed.
func (s *Sampler) penalize(logits []float32, history []int, rp float32) {
	if len(s.seen) != len(logits) {
		s.seen = make([]uint32, len(logits))
	}
	s.stamp++
	if s.stamp == 0 { // wrapped: old marks could collide
		clear(s.seen)
		s.stamp = 1
	}
	for _, id := range history {
		if id >= 0 && id < len(logits) && s.seen[id] != s.stamp {
			s.seen[id] = s.stamp
			if logits[id] > 0 {
				logits[id] /= rp
			} else {
				logits[id] *= rp
			}
		}
	}
}

// penalizeOutput applies the frequency and presence penalties over the
// generated tokens: counted once, then each distinct token adjusted once.
func (s *Sampler) penalizeOutput(logits []float32, out []int) {
	if len(s.counts) != len(logits) {
		s.counts = make([]int32, len(logits))
	}
	for _, id := range out {
		if id >= 0 && id < len(logits) {
			s.counts[id]++
		}
	}
	for _, id := range out {
		if id >= 0 && id < len(logits) && s.counts[id] > 0 {
			logits[id] -= float32(s.counts[id])*s.p.FrequencyPenalty + s.p.PresencePenalty
			s.counts[id] = 0
		}
	}
}

// Argmax returns the index of the largest value, the lowest on a tie.
func Argmax(x []float32) int {
	if len(x) == 0 {
		return 0
	}
	if haveAVX2 && len(x) >= 64 && x[0] == x[0] {
		// Two vector passes: the maximum, then where it first occurs. Same
		// answer as the loop below, which keeps the first of equal values.
		n := len(x) &^ 31
		m := maxF32AVX2(&x[0], n)
		for _, v := range x[n:] {
			if v > m {
				m = v
			}
		}
		if i := indexF32AVX2(&x[0], len(x)&^7, m); i >= 0 {
			return i
		}
		return len(x)&^7 + slices.Index(x[len(x)&^7:], m)
	}
	best, bv := 0, x[0]
	for i, v := range x {
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}
