package sched

import (
	"slices"
	"testing"
	"time"
)

func sloSeq(id uint64, ch string, owner uint32, promptLen int, deadline time.Duration) *Sequence {
	q := mkSeq(id, promptLen, int(id)*1000)
	q.Channel, q.Owner = ch, owner
	if deadline > 0 {
		q.Deadline = t0.Add(deadline)
	}
	return q
}

func admittedIDs(st *Step) []uint64 {
	var ids []uint64
	for _, sc := range st.Seqs {
		ids = append(ids, sc.Seq.ID)
	}
	return ids
}

func TestSLOEarliestDeadlineFirst(t *testing.T) {
	s, _ := newSched(t, 64, Config{Policy: PolicySLO, MaxNumSeqs: 2})
	s.Add(sloSeq(1, "bulk", 1, 8, 60*time.Second))
	s.Add(sloSeq(2, "standard", 2, 8, 5*time.Second))
	s.Add(sloSeq(3, "realtime", 3, 8, time.Second))
	if got := admittedIDs(s.Schedule(t0, Limits{})); !slices.Equal(got, []uint64{3, 2}) {
		t.Fatalf("admitted %v, want realtime then standard", got)
	}
}

func TestSLOSharesAndUserFairness(t *testing.T) {
	cfg := Config{Policy: PolicySLO, MaxNumBatchedTokens: 100, MaxPartialPrefills: 4,
		Shares: map[string]float64{"realtime": 0.5, "bulk": 0.2}}
	s, _ := newSched(t, 64, cfg)
	// User 7 floods realtime; user 8 has one realtime request later; bulk has one.
	s.Add(sloSeq(1, "realtime", 7, 20, time.Second))
	s.Add(sloSeq(2, "realtime", 7, 20, time.Second))
	s.Add(sloSeq(3, "realtime", 7, 20, time.Second))
	s.Add(sloSeq(4, "realtime", 8, 20, 2*time.Second))
	s.Add(sloSeq(5, "bulk", 9, 20, time.Minute))
	// First pass: one request of user 7, then user 8's (fairness), then bulk
	// (within its share); the second pass fills the rest of the budget.
	got := admittedIDs(s.Schedule(t0, Limits{}))
	if !slices.Equal(got[:3], []uint64{1, 4, 5}) || len(got) != 5 {
		t.Fatalf("admitted %v", got)
	}
}

func TestDeadlinePassedWhileWaitingExpires(t *testing.T) {
	s, pool := newSched(t, 64, Config{Policy: PolicySLO, MaxNumSeqs: 1})
	s.Add(sloSeq(1, "standard", 1, 8, 0))
	s.Add(sloSeq(2, "realtime", 1, 8, 500*time.Millisecond))
	st := s.Schedule(t0.Add(time.Second), Limits{}) // 2's deadline passed before it could start
	if len(st.Expired) != 1 || st.Expired[0].ID != 2 || !slices.Equal(admittedIDs(st), []uint64{1}) {
		t.Fatalf("expired %v, admitted %v", st.Expired, admittedIDs(st))
	}
	apply(s, st)
	if s.Waiting() != 0 || pool.Usage().Used != 1 {
		t.Fatalf("waiting %d, used %d", s.Waiting(), pool.Usage().Used)
	}
}

func TestSLODisplacesLaterDeadline(t *testing.T) {
	s, _ := newSched(t, 64, Config{Policy: PolicySLO, MaxNumSeqs: 1})
	s.Add(sloSeq(1, "bulk", 1, 8, time.Hour))
	apply(s, s.Schedule(t0, Limits{}))
	s.Add(sloSeq(2, "realtime", 2, 8, time.Second))
	st := s.Schedule(t0, Limits{})
	if len(st.Preempted) != 1 || st.Preempted[0].ID != 1 || !slices.Equal(admittedIDs(st), []uint64{2}) {
		t.Fatalf("preempted %v admitted %v", st.Preempted, admittedIDs(st))
	}
}
