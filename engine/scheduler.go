package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/batchd/batchd/kvcache"
)

// Policy orders the waiting queue and chooses whom to preempt.
type Policy int

// The scheduling policies.
const (
	PolicyFCFS     Policy = iota // arrival order
	PolicyPriority               // higher Priority first, then arrival
	PolicySLO                    // earliest deadline first, channel shares, one request per user per pass
)

func (p Policy) String() string {
	switch p {
	case PolicyFCFS:
		return "fcfs"
	case PolicyPriority:
		return "priority"
	case PolicySLO:
		return "slo"
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// ParsePolicy parses "fcfs" or "priority".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "fcfs", "":
		return PolicyFCFS, nil
	case "priority":
		return PolicyPriority, nil
	case "slo":
		return PolicySLO, nil
	}
	return 0, fmt.Errorf("%w: policy %q (want fcfs, priority or slo)", ErrInvalidArgument, s)
}

// Mode is the batching discipline.
type Mode int

// The batching modes. Static and dynamic are request-level baselines kept for benchmarks.
const (
	ModeContinuous Mode = iota // iteration-level: join and leave at every step
	ModeStatic                 // a fixed-size batch runs until its longest member ends
	ModeDynamic                // a batch forms when full or when a wait window expires
)

func (m Mode) String() string {
	switch m {
	case ModeContinuous:
		return "continuous"
	case ModeStatic:
		return "static"
	case ModeDynamic:
		return "dynamic"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseMode parses "continuous", "static" or "dynamic".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "continuous", "":
		return ModeContinuous, nil
	case "static":
		return ModeStatic, nil
	case "dynamic":
		return ModeDynamic, nil
	}
	return 0, fmt.Errorf("%w: mode %q (want continuous, static or dynamic)", ErrInvalidArgument, s)
}

// SchedulerConfig holds the scheduler's knobs; zero fields take defaults.
type SchedulerConfig struct {
	Policy              Policy
	Mode                Mode
	MaxNumSeqs          int           // sequences running at once; default 64
	MaxNumBatchedTokens int           // tokens per step (the token budget); default 512
	MaxPartialPrefills  int           // sequences per step whose prompt chunk leaves more to do; default 1
	BatchSize           int           // static/dynamic batch size; default MaxNumSeqs
	BatchWindow         time.Duration // dynamic: wait window (default 50ms); static: flush after (default 2s)
	// Shares splits each step's admission budget between channels under the
	// slo policy (say realtime 0.5, standard 0.35, bulk 0.15); what a channel
	// leaves unused goes to the others.
	Shares map[string]float64
	// OwnSteps names channels whose sequences run in steps of their own:
	// when more than one group (each such channel, and everything else)
	// has work, steps take the groups in turn.
	OwnSteps map[string]bool
}

func (c SchedulerConfig) withDefaults() SchedulerConfig {
	if c.MaxNumSeqs <= 0 {
		c.MaxNumSeqs = 64
	}
	if c.MaxNumBatchedTokens <= 0 {
		c.MaxNumBatchedTokens = 512
	}
	if c.MaxPartialPrefills <= 0 {
		c.MaxPartialPrefills = 1
	}
	if c.BatchSize <= 0 {
		c.BatchSize = c.MaxNumSeqs
	}
	if c.BatchWindow <= 0 {
		c.BatchWindow = 50 * time.Millisecond
		if c.Mode == ModeStatic {
			c.BatchWindow = 2 * time.Second
		}
	}
	return c
}

// SeqStatus is where a sequence is in its life.
type SeqStatus int

// Sequence states.
const (
	SeqWaiting SeqStatus = iota
	SeqRunning
	SeqFinished
)

func (s SeqStatus) String() string {
	return [...]string{"waiting", "running", "finished"}[s]
}

// Sequence is the scheduler's view of a request: its tokens (prompt, then
// generated) and how many of them have their KV computed.
type Sequence struct {
	ID        uint64
	Priority  int
	Channel   string
	Owner     uint32
	Deadline  time.Time // first token due by; zero = none. Past it while waiting: expired
	Padding   bool      // ended, but holds its row until its request-level batch ends
	Arrival   time.Time
	Tokens    []int
	PromptLen int
	MaxTokens int
	Computed  int // tokens whose K/V are in the cache
	Status    SeqStatus

	Preemptions  int
	CachedTokens int       // prompt tokens served from the prefix cache at first admission
	FirstSched   time.Time // zero until first scheduled
	// Embed: the prompt is all there is (an embedding); every token is
	// computed, none served from the prefix cache.
	Embed bool
	// Prefill: the prompt is computed into the cache, nothing sampled.
	Prefill bool
	// Salt roots its prefix-cache chain (kvcache.Salt of Request.CacheSalt):
	// it shares blocks only with sequences of the same salt.
	Salt kvcache.Hash
	// Draft: tokens proposed to follow Tokens (speculative decoding),
	// verified in the sequence's next decode share when there is room.
	Draft []int
	order uint64
}

// Generated returns how many tokens the sequence has produced.
func (s *Sequence) Generated() int { return len(s.Tokens) - s.PromptLen }

// Scheduled is one sequence's share of a step: tokens [Start, Start+N).
type Scheduled struct {
	Seq    *Sequence
	Start  int
	N      int
	Logits bool // the share ends at the last known token: sample the next
	Hidden bool // an embedding's share: its tokens' final hidden states
	// Draft follows the share's last token in the forward pass, each with
	// its logits: verified, not yet part of Tokens.
	Draft []int
}

// Step is the plan for one forward pass.
type Step struct {
	Now       time.Time
	Seqs      []Scheduled
	Preempted []*Sequence // moved back to waiting this step, KV freed
	Expired   []*Sequence // removed from waiting: their deadline passed before they started
	Released  []*Sequence // padding rows freed: their request-level batch ended
	Tokens    int         // tokens scheduled, at most the token budget
}

func (st *Step) add(seq *Sequence, n int) {
	st.Seqs = append(st.Seqs, Scheduled{Seq: seq, Start: seq.Computed, N: n,
		Logits: !seq.Embed && !seq.Prefill && seq.Computed+n == len(seq.Tokens), Hidden: seq.Embed})
	st.Tokens += n
	if seq.FirstSched.IsZero() {
		seq.FirstSched = st.Now
	}
}

// Scheduler decides each step who runs and how many tokens each processes.
// It is a synchronous state machine: no goroutines, no clock of its own.
type Scheduler struct {
	cfg         SchedulerConfig
	pool        *kvcache.Pool
	waiting     []*Sequence // in policy order
	running     []*Sequence // in policy order at the start of each step
	nextOrder   uint64
	preemptions uint64
	lastArrival time.Time
	gapEWMA     time.Duration // dynamic mode: smoothed gap between arrivals
	pol         policy        // from cfg.Policy
	bat         batching      // from cfg.Mode
	// promptOnly: the backend computes prompt and generated tokens
	// differently (backend.RoleAware), so only prompt blocks are shared:
	// a block a request generated would differ from the same tokens
	// computed as another request's prompt.
	promptOnly bool
	// stepCap, when set, bounds a step's prefill to about this many tokens
	// besides one token per running sequence (another engine shares the
	// cores; see ComputeGate).
	stepCap int
	// embedLeft is what embeddings may still take of this step's budget;
	// embedTokens, when set, bounds it beside generations (the engine's
	// measure of embedStep's worth of prompt tokens).
	embedLeft, embedTokens int
	// stepGroup is the group this step serves ("" when all may share it);
	// turn rotates the groups (OwnSteps).
	stepGroup string
	turn      int
	// whole: the model attends bidirectionally (an encoder), so each text
	// runs in one share from position 0, alone over the budget if it must,
	// and its blocks are never shared (a K/V row depends on the whole text).
	whole bool
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
		if s.embedTokens > 0 {
			share = min(share, max(16, s.embedTokens))
		}
		return share
	}
	return budget
}

// NewScheduler returns a scheduler over pool.
func NewScheduler(cfg SchedulerConfig, pool *kvcache.Pool) *Scheduler {
	s := &Scheduler{pool: pool}
	s.SetConfig(cfg)
	return s
}

// Config returns the effective configuration.
func (s *Scheduler) Config() SchedulerConfig { return s.cfg }

// SetConfig replaces the knobs (hot reload); it applies from the next step.
func (s *Scheduler) SetConfig(cfg SchedulerConfig) {
	s.cfg = cfg.withDefaults()
	s.pol, s.bat = policyFor(s.cfg.Policy), batchingFor(s.cfg.Mode)
	s.sortWaiting()
}

// Waiting and Running return queue lengths.
func (s *Scheduler) Waiting() int { return len(s.waiting) }

// Running returns how many sequences hold a place in the running set.
func (s *Scheduler) Running() int { return len(s.running) }

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
// blocks, waiting ones in policy order.
func (s *Scheduler) Schedule(now time.Time) *Step {
	st := &Step{Now: now}
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
	if s.stepCap > 0 {
		budget = min(budget, s.stepCap+len(s.running))
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
		if s.whole && n > room && len(st.Seqs) > 0 {
			continue // a later step, whole
		}
		if s.whole {
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
		rest := len(seq.Tokens) - cached
		n := min(rest, *budget)
		if seq.Embed {
			n = min(n, s.embedLeft)
		}
		switch {
		case s.whole && n < rest && len(st.Seqs) == 0:
			n = rest // alone, over the budget: a text longer than it runs whole or never
		case s.whole && n < rest && continuous:
			return false // the next step, whole, in order
		case s.whole && n < rest:
			n = 0
		}
		if n < rest && !s.whole {
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
	if !seq.Padding && !s.whole { // pad tokens are not worth a prefix-cache entry
		s.pool.Commit(kvcache.SeqID(seq.ID), seq.Salt, seq.Tokens[:s.cacheable(seq, seq.Computed)])
	}
}

// cacheable bounds the first n tokens of seq to those the prefix cache may
// share: all of them, or only the prompt's under promptOnly.
func (s *Scheduler) cacheable(seq *Sequence, n int) int {
	if s.promptOnly {
		return min(n, seq.PromptLen)
	}
	return n
}

// NextWake returns when a step could next have work without new input: the
// end of a batch window in the request-level modes.
func (s *Scheduler) NextWake() (time.Time, bool) { return s.bat.nextWake(s) }
