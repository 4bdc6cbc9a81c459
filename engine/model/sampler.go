package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// SamplingParams choose the next token from logits. The zero value is greedy.
type SamplingParams struct {
	Temperature       float32 // 0 = greedy (argmax, lowest id on a tie)
	TopK              int     // keep the k most likely; 0 = off
	TopP              float32 // keep the smallest set with this much mass; 0 or 1 = off
	MinP              float32 // drop tokens below MinP x the top probability; 0 = off
	RepetitionPenalty float32 // >1 discourages tokens already seen (CTRL-style); 0 or 1 = off
	Seed              uint64  // RNG seed; same seed, prompt and model give the same tokens
}

// Validate reports parameters outside their ranges.
func (p SamplingParams) Validate() error {
	switch {
	case p.Temperature < 0 || math.IsNaN(float64(p.Temperature)):
		return fmt.Errorf("temperature %v must be >= 0", p.Temperature)
	case p.TopK < 0:
		return fmt.Errorf("top_k %d must be >= 0", p.TopK)
	case p.TopP < 0 || p.TopP > 1 || math.IsNaN(float64(p.TopP)):
		return fmt.Errorf("top_p %v must be in [0, 1]", p.TopP)
	case p.MinP < 0 || p.MinP > 1 || math.IsNaN(float64(p.MinP)):
		return fmt.Errorf("min_p %v must be in [0, 1]", p.MinP)
	case p.RepetitionPenalty < 0 || math.IsNaN(float64(p.RepetitionPenalty)):
		return fmt.Errorf("repetition_penalty %v must be >= 0", p.RepetitionPenalty)
	}
	return nil
}

// Sampler draws tokens for one sequence with its own seeded RNG, so that the
// draw does not depend on what else is in the batch.
type Sampler struct {
	p    SamplingParams
	rng  *rand.Rand
	cand []candidate
}

type candidate struct {
	id int
	p  float32
}

// NewSampler returns a sampler for params.
func NewSampler(p SamplingParams) *Sampler {
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))}
}

// Sample picks the next token. history (prompt and output so far) feeds the
// repetition penalty. logits are modified in place.
func (s *Sampler) Sample(logits []float32, history []int) int {
	if rp := s.p.RepetitionPenalty; rp > 0 && rp != 1 {
		for _, id := range history {
			if id >= 0 && id < len(logits) {
				if logits[id] > 0 {
					logits[id] /= rp
				} else {
					logits[id] *= rp
				}
			}
		}
	}
	if s.p.Temperature == 0 {
		return Argmax(logits)
	}
	inv := 1 / s.p.Temperature
	mx := logits[Argmax(logits)]
	s.cand = s.cand[:0]
	var sum float32
	for id, l := range logits {
		p := float32(math.Exp(float64((l - mx) * inv)))
		sum += p
		s.cand = append(s.cand, candidate{id, p})
	}
	for i := range s.cand {
		s.cand[i].p /= sum
	}
	c := s.cand
	// Sort by probability, id breaking ties, so the draw is reproducible.
	sort.Slice(c, func(i, j int) bool {
		if c[i].p != c[j].p {
			return c[i].p > c[j].p
		}
		return c[i].id < c[j].id
	})
	if k := s.p.TopK; k > 0 && k < len(c) {
		c = c[:k]
	}
	if mp := s.p.MinP; mp > 0 {
		cut := c[0].p * mp
		n := 1
		for n < len(c) && c[n].p >= cut {
			n++
		}
		c = c[:n]
	}
	if tp := s.p.TopP; tp > 0 && tp < 1 {
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
	var total float32
	for _, x := range c {
		total += x.p
	}
	r := s.rng.Float32() * total
	for _, x := range c {
		r -= x.p
		if r < 0 {
			return x.id
		}
	}
	return c[len(c)-1].id
}

// Argmax returns the index of the largest value, the lowest on a tie.
func Argmax(x []float32) int {
	if len(x) == 0 {
		return 0
	}
	if haveSIMD && len(x) >= 64 && x[0] == x[0] {
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
