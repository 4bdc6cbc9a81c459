package sched

import (
	"slices"
	"testing"

	"github.com/batchd/batchd/kvcache"
)

// TestDraftsFollowDecodesAndNeverPreempt: a running sequence's draft joins
// its decode share when the budget and free blocks allow; without the
// blocks the draft is dropped (never another sequence preempted), and
// AcceptDrafts gives the refused drafts' blocks back.
func TestDraftsFollowDecodesAndNeverPreempt(t *testing.T) {
	s, pool := newSched(t, 2, Config{MaxNumBatchedTokens: 64})
	a, b := mkSeq(1, 15, 0), mkSeq(2, 10, 100)
	s.Add(a)
	s.Add(b)
	apply(s, s.Schedule(t0, Limits{})) // a block each, none free
	a.Draft = []int{7, 7, 7}
	st := s.Schedule(t0, Limits{})
	if len(st.Preempted) != 0 || len(st.Seqs[0].Draft) != 0 || len(a.Draft) != 0 {
		t.Fatalf("no free block: preempted %v, draft %v; want the draft dropped", st.Preempted, st.Seqs[0].Draft)
	}
	apply(s, st)
	s.Finish(b) // a block free
	a.Draft = []int{7, 7, 7}
	st = s.Schedule(t0, Limits{})
	if len(st.Seqs) != 1 || !slices.Equal(st.Seqs[0].Draft, []int{7, 7, 7}) || st.Tokens != 4 {
		t.Fatalf("step %+v tokens %d, want the decode and its three drafts", st.Seqs, st.Tokens)
	}
	if got := len(pool.Blocks(kvcache.SeqID(1))); got != 2 {
		t.Fatalf("a holds %d blocks for 17+3 tokens, want 2", got)
	}
	apply(s, st)
	s.AcceptDrafts(a, 0) // all refused: back to its 18 tokens
	if got := len(pool.Blocks(kvcache.SeqID(1))); got != 2 || a.Computed != 17 {
		t.Fatalf("after refusing: %d blocks, computed %d", got, a.Computed)
	}
}
