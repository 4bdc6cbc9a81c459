package sched

import "time"

// policy is what a scheduling policy decides, as vLLM's request queues
// split it: the order of the queues, whether a waiting sequence may take a
// running one's place, how big a running prefill's chunk may be, and which
// waiting sequences a first admission pass considers. Adding a policy is a
// type here and a case in policyFor, not an if in Schedule.
type policy interface {
	// before orders waiting and running sequences (the most urgent first).
	before(a, b *Sequence) bool
	// displaces reports whether waiting a may take running b's place when
	// the running set is full.
	displaces(a, b *Sequence) bool
	// chunkCap bounds running seq's prompt chunk this step; head is the
	// first waiting sequence (nil if none).
	chunkCap(seq, head *Sequence, cfg Config) int
	// firstPass returns the filter of a first admission pass and what to
	// note of each admitted sequence, or nils for a single in-order pass.
	firstPass(budget int, cfg Config) (eligible func(*Sequence) bool, admitted func(*Sequence, int))
}

func policyFor(p Policy) policy {
	switch p {
	case PolicyPriority:
		return priorityPolicy{}
	case PolicySLO:
		return sloPolicy{}
	}
	return fcfsPolicy{}
}

// fcfsPolicy serves in arrival order and never displaces.
type fcfsPolicy struct{}

func (fcfsPolicy) before(a, b *Sequence) bool              { return a.order < b.order }
func (fcfsPolicy) displaces(a, b *Sequence) bool           { return false }
func (fcfsPolicy) chunkCap(seq, _ *Sequence, _ Config) int { return remaining(seq) }
func (fcfsPolicy) firstPass(int, Config) (func(*Sequence) bool, func(*Sequence, int)) {
	return nil, nil
}

// priorityPolicy serves higher Priority first (then arrival), and a higher
// priority displaces a lower one.
type priorityPolicy struct{ fcfsPolicy }

func (priorityPolicy) before(a, b *Sequence) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.order < b.order
}

func (priorityPolicy) displaces(a, b *Sequence) bool { return a.Priority > b.Priority }

// sloPolicy serves earliest deadline first, lets a sooner-due request
// displace a later one, holds back a running prefill while something due
// sooner waits, and admits each channel within its share of the step,
// fairly between users, before handing out what is left.
type sloPolicy struct{}

func (sloPolicy) before(a, b *Sequence) bool {
	if !a.Deadline.Equal(b.Deadline) {
		switch {
		case a.Deadline.IsZero():
			return false
		case b.Deadline.IsZero():
			return true
		}
		return a.Deadline.Before(b.Deadline)
	}
	return a.order < b.order
}

func (sloPolicy) displaces(a, b *Sequence) bool {
	return !a.Deadline.IsZero() && (b.Deadline.IsZero() || a.Deadline.Before(b.Deadline))
}

// chunkCap gives a prefill only its channel's share of the budget while a
// waiting request is due sooner, so long bulk prompts do not hold realtime back.
func (sloPolicy) chunkCap(seq, head *Sequence, cfg Config) int {
	n := remaining(seq)
	var urgent time.Time
	if head != nil {
		urgent = head.Deadline // waiting is in deadline order
	}
	share, ok := cfg.Shares[seq.Channel]
	if urgent.IsZero() || n <= 1 || !ok || (!seq.Deadline.IsZero() && !urgent.Before(seq.Deadline)) {
		return n
	}
	return max(int(share*float64(cfg.MaxNumBatchedTokens)), 16)
}

// firstPass: each channel within its share, one request per user per
// channel, in deadline order.
func (sloPolicy) firstPass(budget int, cfg Config) (func(*Sequence) bool, func(*Sequence, int)) {
	caps := map[string]int{}
	for ch, share := range cfg.Shares {
		caps[ch] = int(share * float64(budget))
	}
	type who struct {
		ch    string
		owner uint32
	}
	seen := map[who]bool{}
	eligible := func(q *Sequence) bool {
		c, capped := caps[q.Channel]
		return !seen[who{q.Channel, q.Owner}] && (!capped || c > 0)
	}
	admitted := func(q *Sequence, n int) {
		seen[who{q.Channel, q.Owner}] = true
		if _, capped := caps[q.Channel]; capped {
			caps[q.Channel] -= n
		}
	}
	return eligible, admitted
}

// remaining is the tokens of seq not yet computed.
func remaining(seq *Sequence) int { return len(seq.Tokens) - seq.Computed }
