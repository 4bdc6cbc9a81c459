package sched

import (
	"time"

	"github.com/batchd/batchd/kvcache"
)

// batching is how sequences join and leave the running set: iteration-level
// (continuous) or request-level (the static and dynamic baselines, which
// keep a finished member's row until its whole batch ends, as a padded
// fixed-shape batch does). The scheduler asks it at the few points where
// the two differ.
type batching interface {
	// beginStep runs before the running set is scheduled.
	beginStep(s *Scheduler, st *Step)
	// mayDisplace reports whether waiting sequences may displace running ones.
	mayDisplace() bool
	// admitLimit is how many waiting sequences may join this step.
	admitLimit(s *Scheduler, now time.Time) int
	// continuous reports whether admission stops when the step's token
	// budget runs out (a request-level member joins and prefills later).
	continuous() bool
	// keepRow reports whether Finish keeps seq's row as padding.
	keepRow(s *Scheduler, seq *Sequence) bool
	// nextWake says when a step could next have work without new input.
	nextWake(s *Scheduler) (time.Time, bool)
}

func batchingFor(m Mode) batching {
	if m == ModeContinuous {
		return continuousBatching{}
	}
	return requestBatching{mode: m}
}

// continuousBatching lets sequences join and leave at every step.
type continuousBatching struct{}

func (continuousBatching) beginStep(*Scheduler, *Step) {}
func (continuousBatching) mayDisplace() bool           { return true }
func (continuousBatching) continuous() bool            { return true }
func (continuousBatching) keepRow(*Scheduler, *Sequence) bool {
	return false
}
func (continuousBatching) nextWake(*Scheduler) (time.Time, bool) { return time.Time{}, false }
func (continuousBatching) admitLimit(s *Scheduler, _ time.Time) int {
	return s.cfg.MaxNumSeqs - len(s.running)
}

// requestBatching forms a batch when it is full or its window expires, and
// runs it until its longest member ends.
type requestBatching struct{ mode Mode }

func (requestBatching) mayDisplace() bool { return false }
func (requestBatching) continuous() bool  { return false }

// beginStep ends a batch whose live members are all done.
func (requestBatching) beginStep(s *Scheduler, st *Step) {
	for _, q := range s.running {
		if !q.Padding {
			return
		}
	}
	for _, q := range s.running {
		s.pool.Free(kvcache.SeqID(q.ID))
		q.Status = SeqFinished
		st.Released = append(st.Released, q)
	}
	s.running = s.running[:0]
}

// keepRow keeps a member that ends before the others, and its compute.
func (requestBatching) keepRow(s *Scheduler, seq *Sequence) bool {
	if seq.Status != SeqRunning || seq.Computed == 0 {
		return false
	}
	for _, q := range s.running {
		if q != seq && !q.Padding {
			seq.Padding = true
			return true
		}
	}
	return false
}

func (b requestBatching) admitLimit(s *Scheduler, now time.Time) int {
	if len(s.running) > 0 || !b.ready(s, now) {
		return 0
	}
	return min(s.cfg.MaxNumSeqs-len(s.running), s.cfg.BatchSize)
}

func (b requestBatching) ready(s *Scheduler, now time.Time) bool {
	if len(s.waiting) == 0 {
		return false
	}
	if len(s.waiting) >= s.cfg.BatchSize {
		return true
	}
	return !now.Before(oldestWaiting(s).Add(b.window(s)))
}

// window is how long a batch waits to fill: fixed for static; for dynamic,
// the time the smoothed arrival gap needs to bring half a batch, within
// [1ms, BatchWindow].
func (b requestBatching) window(s *Scheduler) time.Duration {
	if b.mode != ModeDynamic || s.gapEWMA == 0 {
		return s.cfg.BatchWindow
	}
	return min(max(s.gapEWMA*time.Duration(s.cfg.BatchSize)/2, time.Millisecond), s.cfg.BatchWindow)
}

func (b requestBatching) nextWake(s *Scheduler) (time.Time, bool) {
	if len(s.running) > 0 || len(s.waiting) == 0 {
		return time.Time{}, false
	}
	return oldestWaiting(s).Add(b.window(s)), true
}

func oldestWaiting(s *Scheduler) time.Time {
	oldest := s.waiting[0].Arrival
	for _, w := range s.waiting[1:] {
		if w.Arrival.Before(oldest) {
			oldest = w.Arrival
		}
	}
	return oldest
}

// schedulePadding runs one decode token of a finished member of a
// request-level batch, classifier included, and discards its output. Its
// context keeps growing, as a dense fixed-shape batch's rows do, up to the
// member's own token limit (within its admission check) while blocks are
// free; past that it recomputes its last position. It never preempts.
func (s *Scheduler) schedulePadding(seq *Sequence, st *Step) {
	start := seq.Computed - 1
	if seq.Computed < seq.PromptLen+seq.MaxTokens-1 &&
		s.pool.Allocate(kvcache.SeqID(seq.ID), nil, seq.Computed+1) == nil {
		if len(seq.Tokens) == seq.Computed { // it ended on a stop token: feed a pad
			seq.Tokens = append(seq.Tokens, seq.Tokens[seq.Computed-1])
		}
		start = seq.Computed
	}
	st.Seqs = append(st.Seqs, Scheduled{Seq: seq, Start: start, N: 1, Logits: true})
	st.Tokens++
}
