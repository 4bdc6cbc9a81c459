package ipc

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/ipc/wire"
)

// TestBudgetEvictsTheOldestPending: when the pending share is full, a new
// connection closes the oldest one that has not authenticated, never an
// authenticated one; when every slot is authenticated, the new one is
// refused with resource_exhausted.
func TestBudgetEvictsTheOldestPending(t *testing.T) {
	b := NewBudget(BudgetOptions{Max: 4, MaxPending: 2, PerUser: 4})
	var evicted []string
	admit := func(name string) *Slot {
		s, err := b.Admit(func() { evicted = append(evicted, name) })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return s
	}
	a, _ := admit("a"), admit("b")
	admit("c") // the pending share (2) is full: a goes
	if len(evicted) != 1 || evicted[0] != "a" {
		t.Fatalf("evicted %v, want [a]", evicted)
	}
	if err := a.Authenticate(7); err == nil {
		t.Fatal("an evicted slot authenticated")
	}
	a.Release() // after an eviction: nothing
	d := admit("d")
	if err := d.Authenticate(7); err != nil {
		t.Fatal(err)
	}
	e := admit("e") // 1 authenticated + 2 pending + e: b goes (oldest pending)
	if err := e.Authenticate(8); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Open != 3 || st.Pending != 1 || st.Evicted != 2 {
		t.Fatalf("stats %+v, want 3 open, 1 pending, 2 evicted", st)
	}
	f := admit("f")
	if err := f.Authenticate(9); err != nil {
		t.Fatal(err)
	}
	g := admit("g") // full: the one pending (c) gives way
	if err := g.Authenticate(10); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Admit(func() { t.Error("nothing to evict") }); !errors.Is(err, wire.ErrResourceExhausted) {
		t.Fatalf("all authenticated: %v, want resource_exhausted", err)
	}
	if st := b.Stats(); st.Open != 4 || st.Refused != 1 || len(evicted) != 3 {
		t.Fatalf("stats %+v, evicted %v", st, evicted)
	}
	g.Release()
	if _, err := b.Admit(func() {}); err != nil {
		t.Fatalf("a freed slot is taken again: %v", err)
	}
}

// TestBudgetPerUserCap: one uid holds at most PerUser authenticated
// connections; root and the daemon's own user are not capped.
func TestBudgetPerUserCap(t *testing.T) {
	b := NewBudget(BudgetOptions{Max: 16, PerUser: 2, Self: 42})
	for _, tc := range []struct {
		uid  uint32
		n    int
		want int // authenticated
	}{{1001, 4, 2}, {0, 4, 4}, {42, 4, 4}, {1002, 1, 1}} {
		ok := 0
		for range tc.n {
			s, err := b.Admit(func() {})
			if err != nil {
				t.Fatal(err)
			}
			if s.Authenticate(tc.uid) == nil {
				ok++
			} else {
				s.Release()
			}
		}
		if ok != tc.want {
			t.Errorf("uid %d: %d of %d authenticated, want %d", tc.uid, ok, tc.n, tc.want)
		}
	}
}

// TestBudgetInvariants: under random admits, authentications, releases
// and evictions the budget never exceeds its bounds, and every slot ends
// exactly once (released or evicted).
func TestBudgetInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := NewBudget(BudgetOptions{Max: 20, MaxPending: 8, PerUser: 5})
	type conn struct {
		s       *Slot
		evicted int
	}
	var open []*conn
	for range 20000 {
		switch r := rng.IntN(10); {
		case r < 5:
			c := &conn{}
			s, err := b.Admit(func() { c.evicted++ })
			if err == nil {
				c.s = s
				open = append(open, c)
			}
		case r < 8 && len(open) > 0:
			_ = open[rng.IntN(len(open))].s.Authenticate(uint32(1000 + rng.IntN(6)))
		case len(open) > 0:
			i := rng.IntN(len(open))
			open[i].s.Release()
			open = append(open[:i], open[i+1:]...)
		}
		st := b.Stats()
		if st.Open > st.Max || st.Pending > st.MaxPending {
			t.Fatalf("stats %+v over the bounds", st)
		}
		b.mu.Lock()
		for uid, n := range b.byUser {
			if n > b.perUser || n < 0 {
				t.Fatalf("uid %d holds %d", uid, n)
			}
		}
		b.mu.Unlock()
	}
	for _, c := range open {
		if c.evicted > 1 {
			t.Fatalf("evicted %d times", c.evicted)
		}
		c.s.Release()
	}
	if st := b.Stats(); st.Open != 0 || st.Pending != 0 {
		t.Fatalf("after releasing everything: %+v", st)
	}
}
