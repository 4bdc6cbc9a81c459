package sched

import "github.com/batchd/batchd/kvcache"

// addDraft schedules seq's draft after its decode token when the budget
// and free blocks allow (drafts never preempt), and returns its tokens.
func (s *Scheduler) addDraft(seq *Sequence, n, budget int, st *Step) int {
	k := len(seq.Draft)
	if k == 0 || n != 1 || k > budget || !st.Seqs[len(st.Seqs)-1].Logits ||
		s.pool.Allocate(kvcache.SeqID(seq.ID), nil, seq.Computed+1+k) != nil {
		seq.Draft = seq.Draft[:0]
		return 0
	}
	st.Seqs[len(st.Seqs)-1].Draft = seq.Draft
	st.Tokens += k
	return k
}

// AcceptDrafts records that a verification kept n drafted tokens (now at
// the end of seq.Tokens, their K/V computed): they join the prefix cache,
// and the blocks of the rejected ones go back at once.
func (s *Scheduler) AcceptDrafts(seq *Sequence, n int) {
	seq.Computed += n
	if n > 0 && !s.opt.Whole {
		s.pool.Commit(kvcache.SeqID(seq.ID), seq.Salt, seq.Tokens[:s.cacheable(seq, seq.Computed)])
	}
	s.pool.Shrink(kvcache.SeqID(seq.ID), len(seq.Tokens))
	s.pool.Slide(kvcache.SeqID(seq.ID), seq.Computed)
}
