package sched

import (
	"slices"
	"testing"
	"time"

	"github.com/batchd/batchd/kvcache"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newSched(t *testing.T, blocks int, cfg Config, o ...Options) (*Scheduler, *kvcache.Pool) {
	t.Helper()
	pool, err := kvcache.New(kvcache.Options{NumBlocks: blocks, BlockSize: 16, PrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	var opt Options
	if len(o) > 0 {
		opt = o[0]
	}
	return New(cfg, pool, opt), pool
}

func mkSeq(id uint64, promptLen, base int) *Sequence {
	toks := make([]int, promptLen)
	for i := range toks {
		toks[i] = base + i
	}
	return &Sequence{ID: id, Tokens: toks, PromptLen: promptLen, MaxTokens: 100, Arrival: t0}
}

// apply completes a step as the engine would, sampling token 7 everywhere.
func apply(s *Scheduler, st *Step) {
	for _, sc := range st.Seqs {
		s.Advance(sc)
		if sc.Logits {
			sc.Seq.Tokens = append(sc.Seq.Tokens, 7)
		}
	}
}

type plan struct {
	id      uint64
	start   int
	n       int
	logits  bool
	nBlocks int
}

func planOf(p *kvcache.Pool, st *Step) []plan {
	var out []plan
	for _, sc := range st.Seqs {
		out = append(out, plan{sc.Seq.ID, sc.Start, sc.N, sc.Logits, len(p.Blocks(kvcache.SeqID(sc.Seq.ID)))})
	}
	return out
}

func TestSchedulerSteps(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		pool  int
		seqs  []*Sequence
		steps [][]plan
	}{{
		name: "chunked prefill under the budget, decodes first",
		cfg:  Config{MaxNumBatchedTokens: 32, MaxPartialPrefills: 1},
		pool: 11,
		seqs: []*Sequence{mkSeq(1, 40, 0), mkSeq(2, 10, 100)},
		steps: [][]plan{
			{{1, 0, 32, false, 2}},
			{{1, 32, 8, true, 3}, {2, 0, 10, true, 1}},
			{{1, 40, 1, true, 3}, {2, 10, 1, true, 1}},
		},
	}, {
		name: "partial prefill cap holds back a second long prompt",
		cfg:  Config{MaxNumBatchedTokens: 48, MaxPartialPrefills: 1},
		pool: 11,
		seqs: []*Sequence{mkSeq(1, 40, 0), mkSeq(2, 40, 100), mkSeq(3, 40, 200)},
		steps: [][]plan{
			{{1, 0, 40, true, 3}, {2, 0, 8, false, 1}}, // seq 3 would be a second partial prefill
			{{1, 40, 1, true, 3}, {2, 8, 32, true, 3}, {3, 0, 15, false, 1}},
			{{1, 41, 1, true, 3}, {2, 40, 1, true, 3}, {3, 15, 25, true, 3}},
		},
	}, {
		name: "max_num_seqs caps the running set",
		cfg:  Config{MaxNumSeqs: 1},
		pool: 11,
		seqs: []*Sequence{mkSeq(1, 5, 0), mkSeq(2, 5, 100)},
		steps: [][]plan{
			{{1, 0, 5, true, 1}},
			{{1, 5, 1, true, 1}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, pool := newSched(t, tc.pool, tc.cfg)
			for _, q := range tc.seqs {
				s.Add(q)
			}
			for i, want := range tc.steps {
				st := s.Schedule(t0, Limits{})
				if got := planOf(pool, st); !slices.Equal(got, want) {
					t.Fatalf("step %d: got %+v, want %+v", i, got, want)
				}
				apply(s, st)
				if err := pool.Check(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestPreemptionRecomputesFromPrefixCache(t *testing.T) {
	s, pool := newSched(t, 11, Config{})
	a, b := mkSeq(1, 80, 0), mkSeq(2, 80, 1000)
	s.Add(a)
	s.Add(b)
	st := s.Schedule(t0, Limits{}) // both prefill: 5 + 5 blocks
	if got := planOf(pool, st); !slices.Equal(got, []plan{{1, 0, 80, true, 5}, {2, 0, 80, true, 5}}) {
		t.Fatalf("prefill %+v", got)
	}
	apply(s, st)
	// Both need a sixth block for their next token; one is left, so the later
	// arrival (b) is preempted and nothing is admitted.
	st = s.Schedule(t0, Limits{})
	if got := planOf(pool, st); !slices.Equal(got, []plan{{1, 80, 1, true, 6}}) {
		t.Fatalf("decode %+v", got)
	}
	if len(st.Preempted) != 1 || st.Preempted[0] != b || b.Computed != 0 || b.Status != SeqWaiting || s.Preemptions() != 1 {
		t.Fatalf("preempted %v, b computed %d status %v", st.Preempted, b.Computed, b.Status)
	}
	if got := pool.Blocks(1); !slices.Equal(got, []int{0, 1, 2, 3, 4, 10}) {
		t.Fatalf("a's blocks %v", got)
	}
	apply(s, st)
	if u := pool.Usage(); u.Used != 6 || u.Cached != 5 {
		t.Fatalf("b's full blocks should stay cached: %+v", u)
	}
	// b cannot come back while a holds the sixth block...
	st = s.Schedule(t0, Limits{})
	if got := planOf(pool, st); !slices.Equal(got, []plan{{1, 81, 1, true, 6}}) {
		t.Fatalf("step 3 %+v", got)
	}
	apply(s, st)
	// ...and when a finishes, b resumes from its cached 80 tokens.
	s.Remove(a)
	st = s.Schedule(t0, Limits{})
	if got := planOf(pool, st); !slices.Equal(got, []plan{{2, 80, 1, true, 6}}) {
		t.Fatalf("resume %+v", got)
	}
	if err := pool.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestPriorityPreemptsWhenFull(t *testing.T) {
	s, pool := newSched(t, 11, Config{Policy: PolicyPriority, MaxNumSeqs: 1})
	low := mkSeq(1, 5, 0)
	s.Add(low)
	apply(s, s.Schedule(t0, Limits{}))
	high := mkSeq(2, 5, 100)
	high.Priority = 5
	s.Add(high)
	st := s.Schedule(t0, Limits{})
	if got := planOf(pool, st); !slices.Equal(got, []plan{{2, 0, 5, true, 1}}) {
		t.Fatalf("got %+v", got)
	}
	if len(st.Preempted) != 1 || st.Preempted[0] != low {
		t.Fatalf("preempted %v", st.Preempted)
	}
	apply(s, st)
	// Equal priority does not displace: fcfs among equals.
	same := mkSeq(3, 5, 200)
	same.Priority = 5
	s.Add(same)
	st = s.Schedule(t0, Limits{})
	if got := planOf(pool, st); !slices.Equal(got, []plan{{2, 5, 1, true, 1}}) {
		t.Fatalf("got %+v", got)
	}
	if s.waiting[0] != same || s.waiting[1] != low {
		t.Fatalf("waiting order %v %v", s.waiting[0].ID, s.waiting[1].ID)
	}
}

func TestStaticBatchRunsToCompletion(t *testing.T) {
	s, pool := newSched(t, 11, Config{Mode: ModeStatic, BatchSize: 2, BatchWindow: time.Second})
	a := mkSeq(1, 5, 0)
	s.Add(a)
	if st := s.Schedule(t0, Limits{}); len(st.Seqs) != 0 {
		t.Fatalf("a batch of 1 formed before the window: %+v", planOf(pool, st))
	}
	if at, ok := s.NextWake(); !ok || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("next wake %v %v", at, ok)
	}
	s.Add(mkSeq(2, 5, 100))
	apply(s, s.Schedule(t0, Limits{}))
	s.Add(mkSeq(3, 5, 200))
	s.Remove(a) // a finishes; 3 must not join until the batch is done
	st := s.Schedule(t0, Limits{})
	if got := planOf(pool, st); !slices.Equal(got, []plan{{2, 5, 1, true, 1}}) {
		t.Fatalf("got %+v", got)
	}
	apply(s, st)
	s.Remove(st.Seqs[0].Seq)
	// The window of seq 3 has not expired and the batch is not full.
	if st := s.Schedule(t0, Limits{}); len(st.Seqs) != 0 {
		t.Fatalf("formed early: %+v", planOf(pool, st))
	}
	if st := s.Schedule(t0.Add(2*time.Second), Limits{}); len(st.Seqs) != 1 {
		t.Fatalf("window expiry did not flush: %+v", planOf(pool, st))
	}
}

func TestDynamicWindowFollowsArrivalGaps(t *testing.T) {
	s, _ := newSched(t, 64, Config{Mode: ModeDynamic, BatchSize: 8, BatchWindow: time.Second})
	for i := range 6 { // arrivals every 10 ms: half a batch comes in 40 ms
		q := mkSeq(uint64(i+1), 4, i*100)
		q.Arrival = t0.Add(time.Duration(i) * 10 * time.Millisecond)
		s.Add(q)
	}
	if w := s.bat.(requestBatching).window(s); w != 40*time.Millisecond {
		t.Fatalf("window %v, want 40ms", w)
	}
	if st := s.Schedule(t0.Add(30*time.Millisecond), Limits{}); len(st.Seqs) != 0 {
		t.Fatal("formed before the window")
	}
	if st := s.Schedule(t0.Add(40*time.Millisecond), Limits{}); len(st.Seqs) != 6 {
		t.Fatalf("window expiry formed %d", len(st.Seqs))
	}
}

// TestStaticBatchPadsFinishedMembers: a member that ends early keeps its row
// (and a decode token's compute, at a growing position) until the batch ends;
// then all are released.
func TestStaticBatchPadsFinishedMembers(t *testing.T) {
	s, pool := newSched(t, 11, Config{Mode: ModeStatic, BatchSize: 2})
	a, b := mkSeq(1, 5, 0), mkSeq(2, 5, 100)
	s.Add(a)
	s.Add(b)
	apply(s, s.Schedule(t0, Limits{}))
	if !s.Finish(a) || !a.Padding {
		t.Fatal("a finished member was not kept as padding")
	}
	s.Add(mkSeq(3, 5, 200))
	st := s.Schedule(t0, Limits{})
	if got := planOf(pool, st); !slices.Equal(got, []plan{{1, 5, 1, true, 1}, {2, 5, 1, true, 1}}) {
		t.Fatalf("padded step %+v", got)
	}
	apply(s, st)
	if s.Finish(b) { // the last live member: removed, and the batch ends at the next step
		t.Fatal("the last member was padded")
	}
	st = s.Schedule(t0.Add(3*time.Second), Limits{}) // past the flush window: seq 3 forms the next batch
	if len(st.Released) != 1 || st.Released[0] != a || !slices.Equal(admittedIDs(st), []uint64{3}) {
		t.Fatalf("released %v admitted %v", st.Released, admittedIDs(st))
	}
	if err := pool.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestPaddingRowGrowsToItsLimit: a padding row decodes pad tokens at new
// positions, allocating blocks as it goes, until its own token limit; then
// it recomputes its last position. Its pad tokens stay out of the prefix cache.
func TestPaddingRowGrowsToItsLimit(t *testing.T) {
	s, pool := newSched(t, 8, Config{Mode: ModeStatic, BatchSize: 2})
	a, b := mkSeq(1, 15, 0), mkSeq(2, 4, 100)
	a.MaxTokens = 4 // positions 0..17 at most
	s.Add(a)
	s.Add(b)
	apply(s, s.Schedule(t0, Limits{}))
	a.Tokens = a.Tokens[:a.PromptLen] // a ends on a stop token: nothing appended
	if !s.Finish(a) {
		t.Fatal("a was not kept as padding")
	}
	var starts, blocks []int
	for range 5 {
		st := s.Schedule(t0, Limits{})
		for _, sc := range st.Seqs {
			if sc.Seq == a {
				starts = append(starts, sc.Start)
				blocks = append(blocks, len(pool.Blocks(kvcache.SeqID(a.ID))))
			}
		}
		for _, sc := range st.Seqs {
			s.Advance(sc)
			if sc.Logits && sc.Seq == b {
				b.Tokens = append(b.Tokens, 7)
			}
		}
	}
	if !slices.Equal(starts, []int{15, 16, 17, 17, 17}) || !slices.Equal(blocks, []int{1, 2, 2, 2, 2}) {
		t.Fatalf("padding starts %v blocks %v", starts, blocks)
	}
	if got, _ := pool.Lookup(kvcache.Hash{}, append(slices.Clone(a.Tokens[:16]), 0)); len(got) != 0 {
		t.Fatal("a block holding a pad token was published to the prefix cache")
	}
	if err := pool.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddingsYieldToGenerations: with a generation waiting, a queued
// embedding waits for it in admission, and beside it takes at most a
// quarter of the budget (or what Limits.EmbedTokens allows); with none, the
// whole budget.
func TestEmbeddingsYieldToGenerations(t *testing.T) {
	s, pool := newSched(t, 64, Config{MaxNumBatchedTokens: 64, MaxPartialPrefills: 4})
	emb := mkSeq(1, 200, 0)
	emb.Embed = true
	gen := mkSeq(2, 10, 300)
	s.Add(emb)
	s.Add(gen)
	st := s.Schedule(t0, Limits{})
	if got, want := planOf(pool, st), []plan{{2, 0, 10, true, 1}, {1, 0, 16, false, 1}}; !slices.Equal(got, want) {
		t.Fatalf("first step: %+v, want the generation first and the embedding's 16 (64/4)", got)
	}
	apply(s, st)
	st = s.Schedule(t0, Limits{EmbedTokens: 8})
	if got, want := planOf(pool, st), []plan{{1, 16, 16, false, 2}, {2, 10, 1, true, 1}}; !slices.Equal(got, want) {
		t.Fatalf("beside a decode: %+v, want at least 16 for the embedding", got)
	}
	apply(s, st)
	s.Finish(gen)
	st = s.Schedule(t0, Limits{})
	if got, want := planOf(pool, st), []plan{{1, 32, 64, false, 6}}; !slices.Equal(got, want) {
		t.Fatalf("alone: %+v, want the whole budget", got)
	}
	if st.Seqs[0].Hidden != true {
		t.Error("an embedding's share does not ask for hidden states")
	}
}

// TestSchedulerWholeTexts: with a bidirectional model each embedding runs
// in one share: texts that fit share a step, one that does not waits for
// the next (in order, never chunked), a text longer than the budget runs
// alone over it, and no block reaches the prefix cache.
func TestSchedulerWholeTexts(t *testing.T) {
	s, pool := newSched(t, 64, Config{MaxNumBatchedTokens: 32, MaxPartialPrefills: 4}, Options{Whole: true})
	for id, n := range []int{20, 10, 20, 70} {
		q := mkSeq(uint64(id+1), n, 0) // the same leading tokens: a prefix cache would match them
		q.Embed, q.MaxTokens = true, 0
		s.Add(q)
	}
	want := [][]plan{
		{{1, 0, 20, false, 2}, {2, 0, 10, false, 1}}, // c does not fit whole: it waits, and d behind it
		{{3, 0, 20, false, 2}},                       // d does not fit beside c
		{{4, 0, 70, false, 5}},                       // longer than the budget: alone, whole
	}
	for i, w := range want {
		st := s.Schedule(t0, Limits{})
		if got := planOf(pool, st); !slices.Equal(got, w) {
			t.Fatalf("step %d: %v, want %v", i, got, w)
		}
		apply(s, st)
		for _, sc := range st.Seqs {
			s.Finish(sc.Seq)
		}
	}
	if blocks, cached := pool.Lookup(kvcache.Hash{}, mkSeq(9, 40, 0).Tokens); cached != 0 || len(blocks) != 0 {
		t.Errorf("an encoder's blocks reached the prefix cache: %d cached tokens", cached)
	}
}

// TestOwnSteps: a channel with steps of its own never shares one with
// another channel's sequences; while both have work they take the steps
// in turn, and alone either gets every step.
func TestOwnSteps(t *testing.T) {
	s, _ := newSched(t, 64, Config{MaxNumBatchedTokens: 64, OwnSteps: map[string]bool{"realtime": true}})
	a, b, c := mkSeq(1, 8, 0), mkSeq(2, 8, 100), mkSeq(3, 8, 200)
	a.Channel, b.Channel, c.Channel = "realtime", "standard", "bulk"
	for _, q := range []*Sequence{a, b, c} {
		s.Add(q)
	}
	seen := map[string]int{}
	for range 6 {
		st := s.Schedule(t0, Limits{})
		groups := map[string]bool{}
		for _, sc := range st.Seqs {
			groups[s.group(sc.Seq)] = true
		}
		if len(groups) != 1 {
			t.Fatalf("a step mixed groups: %v", groups)
		}
		for g := range groups {
			seen[g]++
		}
		apply(s, st)
	}
	if seen["realtime"] != 3 || seen[""] != 3 {
		t.Errorf("steps by group %v, want 3 and 3", seen)
	}
	s.Finish(a)
	for range 3 {
		st := s.Schedule(t0, Limits{})
		if len(st.Seqs) != 2 {
			t.Errorf("alone, the shared group's step has %d sequences, want 2", len(st.Seqs))
		}
		apply(s, st)
	}
}
