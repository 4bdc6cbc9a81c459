package sched

import (
	"slices"
	"time"

	"github.com/batchd/batchd/kvcache"
)

// Scheduler decides each step who runs and how many tokens each processes.
// It is a synchronous state machine: no goroutines, no clock of its own.
type Scheduler struct {
	cfg         Config
	pool        *kvcache.Pool
	waiting     []*Sequence // in policy order
	running     []*Sequence // in policy order at the start of each step
	nextOrder   uint64
	preemptions uint64
	lastArrival time.Time
	gapEWMA     time.Duration // dynamic mode: smoothed gap between arrivals
	pol         policy        // from cfg.Policy
	bat         batching      // from cfg.Mode
	opt         Options
	lim         Limits // this step's
	// embedLeft is what embeddings may still take of this step's budget.
	embedLeft int
	// stepGroup is the group this step serves ("" when all may share it);
	// turn rotates the groups (OwnSteps).
	stepGroup string
	turn      int
}

// Options are what the model and backend fix for a scheduler's life.
type Options struct {
	// PromptOnly: the backend computes prompt and generated tokens
	// differently (backend.RoleAware), so only prompt blocks are shared:
	// a block a request generated would differ from the same tokens
	// computed as another request's prompt.
	PromptOnly bool
	// Whole: the model attends bidirectionally (an encoder), so each text
	// runs in one share from position 0, alone over the budget if it must,
	// and its blocks are never shared (a K/V row depends on the whole text).
	Whole bool
	// Resume, when set, says how many of a cached prefix's blocks (from
	// the front) a sequence may resume after: a recurrent model needs its
	// state kept where the prefix ends.
	Resume func(blocks []int) int
}

// Limits are what the engine measures before each step; zeros bound nothing.
type Limits struct {
	// StepCap bounds a step's prefill to about this many tokens besides
	// one token per running sequence (another engine shares the cores).
	StepCap int
	// EmbedTokens bounds the embeddings' part of a step beside
	// generations (the engine's measure of a few milliseconds of prompt).
	EmbedTokens int
}

// embedShare: while generations run or wait, embeddings take at most
// 1/embedShare of a step's token budget (and at most about embedStep of
// forward time) and are admitted after them, so
// a heavy embedding load (bulk work: indexing documents) neither holds a
// chat's prompt in the queue nor stretches its decode steps.
const embedShare = 4

// embedAllowance is the embeddings' part of budget this step: all of it
// when no generation runs or waits.
func (s *Scheduler) embedAllowance(budget int) int {
	gen := func(q *Sequence) bool { return !q.Embed && !q.Padding }
	if slices.ContainsFunc(s.running, gen) || slices.ContainsFunc(s.waiting, gen) {
		share := max(16, budget/embedShare)
		if s.lim.EmbedTokens > 0 {
			share = min(share, max(16, s.lim.EmbedTokens))
		}
		return share
	}
	return budget
}

// New returns a scheduler over pool.
func New(cfg Config, pool *kvcache.Pool, o Options) *Scheduler {
	s := &Scheduler{pool: pool, opt: o}
	s.SetConfig(cfg)
	return s
}

// Config returns the effective configuration.
func (s *Scheduler) Config() Config { return s.cfg }

// SetConfig replaces the knobs (hot reload); it applies from the next step.
func (s *Scheduler) SetConfig(cfg Config) {
	s.cfg = cfg.withDefaults()
	s.pol, s.bat = policyFor(s.cfg.Policy), batchingFor(s.cfg.Mode)
	s.sortWaiting()
}

// Waiting and Running return queue lengths.
func (s *Scheduler) Waiting() int { return len(s.waiting) }

// Running returns how many sequences hold a place in the running set.
func (s *Scheduler) Running() int { return len(s.running) }

// RunningSeqs returns the running set, in policy order as of the last
// step; the caller reads it and must not change it.
func (s *Scheduler) RunningSeqs() []*Sequence { return s.running }

// Whole reports whether each text runs whole (Options.Whole).
func (s *Scheduler) Whole() bool { return s.opt.Whole }

// ByChannel counts running and waiting sequences per channel.
func (s *Scheduler) ByChannel() (running, waiting map[string]int) {
	running, waiting = map[string]int{}, map[string]int{}
	for _, q := range s.running {
		running[q.Channel]++
	}
	for _, q := range s.waiting {
		waiting[q.Channel]++
	}
	return running, waiting
}

// Preemptions returns how many preemptions happened so far.
func (s *Scheduler) Preemptions() uint64 { return s.preemptions }

func (s *Scheduler) cmp(a, b *Sequence) int {
	switch {
	case s.pol.before(a, b):
		return -1
	case s.pol.before(b, a):
		return 1
	}
	return 0
}

func (s *Scheduler) sortWaiting() { slices.SortStableFunc(s.waiting, s.cmp) }

func (s *Scheduler) enqueue(seq *Sequence) {
	i, _ := slices.BinarySearchFunc(s.waiting, seq, s.cmp)
	s.waiting = slices.Insert(s.waiting, i, seq)
}

// Add queues a new sequence.
func (s *Scheduler) Add(seq *Sequence) {
	if !s.lastArrival.IsZero() && seq.Arrival.After(s.lastArrival) {
		gap := seq.Arrival.Sub(s.lastArrival)
		if s.gapEWMA == 0 {
			s.gapEWMA = gap
		} else {
			s.gapEWMA = (4*s.gapEWMA + gap) / 5
		}
	}
	if seq.Arrival.After(s.lastArrival) {
		s.lastArrival = seq.Arrival
	}
	seq.order = s.nextOrder
	s.nextOrder++
	seq.Status = SeqWaiting
	s.enqueue(seq)
}

// Finish ends seq. Under request-level batching (static, dynamic) a member
// that ends before the others keeps its row, and its compute, until the
// whole batch ends, as a padded batch does: Finish then reports true and the
// sequence comes back in Step.Released. Otherwise it is removed.
func (s *Scheduler) Finish(seq *Sequence) bool {
	if s.bat.keepRow(s, seq) {
		return true
	}
	s.Remove(seq)
	return false
}

// Remove takes seq out of whichever queue holds it and frees its blocks.
func (s *Scheduler) Remove(seq *Sequence) {
	s.waiting = slices.DeleteFunc(s.waiting, func(x *Sequence) bool { return x == seq })
	s.running = slices.DeleteFunc(s.running, func(x *Sequence) bool { return x == seq })
	s.pool.Free(kvcache.SeqID(seq.ID))
	seq.Status = SeqFinished
}

// Schedule plans the next step: running sequences first (decodes and
// prefill chunks within the token budget, preempting from the back of the
// policy order when blocks run out), then, unless something was preempted for
// blocks, waiting ones in policy order. lim holds for this step.
func (s *Scheduler) Schedule(now time.Time, lim Limits) *Step {
	st := &Step{Now: now}
	s.lim = lim
	s.expire(st)
	s.bat.beginStep(s, st)
	slices.SortStableFunc(s.running, s.cmp)
	if s.bat.mayDisplace() {
		// A more urgent waiting request displaces the least urgent running one.
		for len(s.waiting) > 0 && len(s.running) >= s.cfg.MaxNumSeqs &&
			s.pol.displaces(s.waiting[0], s.running[len(s.running)-1]) {
			s.preempt(s.running[len(s.running)-1], st)
		}
	}
	displaced := len(st.Preempted)
	s.chooseGroup()
	budget, partial := s.cfg.MaxNumBatchedTokens, 0
	if s.lim.StepCap > 0 {
		budget = min(budget, s.lim.StepCap+len(s.running))
	}
	s.embedLeft = s.embedAllowance(budget)
	var head *Sequence
	if len(s.waiting) > 0 {
		head = s.waiting[0]
	}
	for i := 0; i < len(s.running) && budget > 0; i++ {
		seq := s.running[i]
		if !s.inGroup(seq) {
			continue // another group's step
		}
		if seq.Padding {
			s.schedulePadding(seq, st)
			budget--
			continue
		}
		n := len(seq.Tokens) - seq.Computed
		if n <= 0 {
			continue
		}
		if c := s.pol.chunkCap(seq, head, s.cfg); n > c {
			n = c // leave room for a more urgent waiting request
			partial++
		}
		room := budget
		if seq.Embed {
			room = min(budget, s.embedLeft)
		}
		if s.opt.Whole && n > room && len(st.Seqs) > 0 {
			continue // a later step, whole
		}
		if s.opt.Whole {
			room = n
		}
		if n > room {
			if partial >= s.cfg.MaxPartialPrefills || room == 0 {
				continue
			}
			n = room
			partial++
		}
		if !s.allocateOrPreempt(seq, n, st) {
			break // seq itself was preempted, and it was the last
		}
		st.add(seq, n)
		budget = max(0, budget-n)
		budget -= s.addDraft(seq, n, budget, st)
		if seq.Embed {
			s.embedLeft = max(0, s.embedLeft-n)
		}
	}
	if len(st.Preempted) == displaced {
		s.admit(st, &budget, &partial)
	}
	return st
}

// allocateOrPreempt makes room for n more tokens of seq, preempting the last
// running sequence until it fits. It reports false if seq itself was preempted.
func (s *Scheduler) allocateOrPreempt(seq *Sequence, n int, st *Step) bool {
	for {
		// The only error for a sequence that holds a table is *kvcache.ErrNoBlocks.
		if s.pool.Allocate(kvcache.SeqID(seq.ID), nil, seq.Computed+n) == nil {
			return true
		}
		victim := s.running[len(s.running)-1]
		s.preempt(victim, st)
		if victim == seq {
			return false
		}
	}
}

func (s *Scheduler) preempt(seq *Sequence, st *Step) {
	s.running = slices.DeleteFunc(s.running, func(x *Sequence) bool { return x == seq })
	s.pool.Free(kvcache.SeqID(seq.ID))
	if seq.Padding { // nothing to recompute: its request has ended
		seq.Status = SeqFinished
		st.Released = append(st.Released, seq)
		return
	}
	seq.Computed = 0
	seq.Status = SeqWaiting
	seq.Preemptions++
	s.preemptions++
	s.enqueue(seq)
	st.Preempted = append(st.Preempted, seq)
}

func (s *Scheduler) admit(st *Step, budget, partial *int) {
	limit := s.bat.admitLimit(s, st.Now)
	if limit <= 0 {
		return
	}
	if s.bat.continuous() {
		if eligible, admitted := s.pol.firstPass(*budget, s.cfg); eligible != nil {
			// The second pass hands out what the first left.
			if !s.admitPass(st, budget, partial, &limit, eligible, admitted) {
				return
			}
		}
		if s.embedLeft < *budget { // generations first: embeddings are the bulk work beside them
			if !s.admitPass(st, budget, partial, &limit, func(q *Sequence) bool { return !q.Embed }, nil) {
				return
			}
		}
	}
	s.admitPass(st, budget, partial, &limit, nil, nil)
}

// admitPass admits waiting sequences in order while budget, limit and blocks
// allow; eligible (if set) skips some, admitted is told of each. It reports
// false when admission must stop for this step (no blocks, no budget).
func (s *Scheduler) admitPass(st *Step, budget, partial, limit *int, eligible func(*Sequence) bool,
	admitted func(*Sequence, int)) bool {
	continuous := s.bat.continuous()
	for i := 0; *limit > 0 && i < len(s.waiting); {
		if continuous && *budget == 0 {
			return false
		}
		seq := s.waiting[i]
		if eligible != nil && !eligible(seq) || seq.Embed && s.embedLeft == 0 || !s.inGroup(seq) {
			i++
			continue
		}
		blocks, cached := s.pool.Lookup(seq.Salt, seq.Tokens[:s.cacheable(seq, len(seq.Tokens)-1)])
		if seq.Embed { // pooling needs every token's state
			blocks, cached = nil, 0
		}
		if s.opt.Resume != nil && len(blocks) > 0 {
			blocks = blocks[:s.opt.Resume(blocks)]
		}
		blocks = blocks[:s.pool.Usable(blocks)] // a windowed pool's window blocks end a hit too
		cached = len(blocks) * s.pool.BlockSize()
		rest := len(seq.Tokens) - cached
		n := min(rest, *budget)
		if seq.Embed {
			n = min(n, s.embedLeft)
		}
		switch {
		case s.opt.Whole && n < rest && len(st.Seqs) == 0:
			n = rest // alone, over the budget: a text longer than it runs whole or never
		case s.opt.Whole && n < rest && continuous:
			return false // the next step, whole, in order
		case s.opt.Whole && n < rest:
			n = 0
		}
		if n < rest && !s.opt.Whole {
			if *partial >= s.cfg.MaxPartialPrefills {
				if continuous {
					return false
				}
				n = 0 // a request-level batch member: it prefills in a later step
			} else if n > 0 {
				*partial++
			}
		}
		if err := s.pool.Allocate(kvcache.SeqID(seq.ID), blocks, cached+n); err != nil {
			return false
		}
		s.waiting = slices.Delete(s.waiting, i, i+1)
		if seq.Preemptions == 0 {
			s.pool.Record(len(seq.Tokens)-1, cached)
			seq.CachedTokens = min(cached, seq.PromptLen)
		}
		seq.Computed = cached
		seq.Status = SeqRunning
		s.running = append(s.running, seq)
		*limit--
		if n > 0 {
			st.add(seq, n)
			*budget = max(0, *budget-n)
			if seq.Embed {
				s.embedLeft = max(0, s.embedLeft-n)
			}
		}
		if admitted != nil {
			admitted(seq, n)
		}
	}
	return true
}

// expire removes waiting sequences that never started and whose deadline
// has passed: they are rejected now rather than served late.
func (s *Scheduler) expire(st *Step) {
	for i := 0; i < len(s.waiting); {
		q := s.waiting[i]
		if !q.Deadline.IsZero() && q.FirstSched.IsZero() && st.Now.After(q.Deadline) {
			s.waiting = slices.Delete(s.waiting, i, i+1)
			s.pool.Free(kvcache.SeqID(q.ID))
			st.Expired = append(st.Expired, q)
			continue
		}
		i++
	}
}

// Advance records that the step computed sc's tokens and publishes full
// blocks to the prefix cache.
func (s *Scheduler) Advance(sc Scheduled) {
	seq := sc.Seq
	seq.Computed = sc.Start + sc.N
	if !seq.Padding && !s.opt.Whole { // pad tokens are not worth a prefix-cache entry
		s.pool.Commit(kvcache.SeqID(seq.ID), seq.Salt, seq.Tokens[:s.cacheable(seq, seq.Computed)])
	}
	s.pool.Slide(kvcache.SeqID(seq.ID), seq.Computed)
}

// cacheable bounds the first n tokens of seq to those the prefix cache may
// share: all of them, or only the prompt's under PromptOnly.
func (s *Scheduler) cacheable(seq *Sequence, n int) int {
	if s.opt.PromptOnly {
		return min(n, seq.PromptLen)
	}
	return n
}

// NextWake returns when a step could next have work without new input: the
// end of a batch window in the request-level modes.
func (s *Scheduler) NextWake() (time.Time, bool) { return s.bat.nextWake(s) }
