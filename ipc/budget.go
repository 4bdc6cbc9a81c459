package ipc

import (
	"container/list"
	"sync"

	"github.com/batchd/batchd/ipc/wire"
)

// Budget is the daemon's one budget of open connections, shared by every
// listener (the msgpack socket, the HTTP API on its Unix socket and on
// TCP, the metrics listener), so that together they stay below the
// descriptor limit. A connection starts unauthenticated (pending): before
// hello on the msgpack socket, before its first request with a valid key
// or from an admitted peer over HTTP. Pending connections may hold at most
// MaxPending slots; when the budget or that share is full, the oldest
// pending connection is evicted to admit a new one, so a flood of
// connections that never authenticate cannot keep a key holder or an
// admitted peer out: only authenticated connections are ever refused for
// lack of room. One uid's authenticated connections are capped at PerUser
// (root and the daemon's own user are not), so one user cannot hold them
// all either.
type Budget struct {
	max, maxPending, perUser int
	self                     uint32

	mu      sync.Mutex
	pending list.List // of *Slot, oldest first
	authed  int
	byUser  map[uint32]int
	refused uint64
	evicted uint64
}

// BudgetOptions size a Budget.
type BudgetOptions struct {
	Max        int    // connections open at once, all listeners together; default DefaultMaxConnections
	MaxPending int    // of those, unauthenticated; default Max/2
	PerUser    int    // authenticated connections of one uid; default Max/4
	Self       uint32 // the daemon's uid (exempt from PerUser, as root is)
}

// NewBudget returns a budget; every option has a default.
func NewBudget(o BudgetOptions) *Budget {
	if o.Max <= 0 {
		o.Max = DefaultMaxConnections
	}
	if o.MaxPending <= 0 || o.MaxPending > o.Max {
		o.MaxPending = max(1, o.Max/2)
	}
	if o.PerUser <= 0 {
		o.PerUser = max(1, o.Max/4)
	}
	return &Budget{max: o.Max, maxPending: o.MaxPending, perUser: o.PerUser, self: o.Self, byUser: map[uint32]int{}}
}

// BudgetStats are a budget's figures.
type BudgetStats struct {
	Max, MaxPending, PerUser int
	Open, Pending            int
	Refused, Evicted         uint64 // connections refused for room; pending ones closed to make room
}

// Stats returns the budget's figures now.
func (b *Budget) Stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BudgetStats{Max: b.max, MaxPending: b.maxPending, PerUser: b.perUser,
		Open: b.authed + b.pending.Len(), Pending: b.pending.Len(), Refused: b.refused, Evicted: b.evicted}
}

// Slot is one connection's place in the budget.
type Slot struct {
	b        *Budget
	elem     *list.Element // in b.pending while pending
	uid      uint32
	authed   bool
	released bool
	evict    func()
}

// Admit takes a pending slot for a new connection; evict closes that
// connection if the budget later needs its room (it is called once,
// without the budget's lock, and must not block). When no room is left
// and no pending connection can give way, it returns resource_exhausted.
func (b *Budget) Admit(evict func()) (*Slot, error) {
	b.mu.Lock()
	var victim *Slot
	if b.pending.Len() >= b.maxPending || b.authed+b.pending.Len() >= b.max {
		if b.pending.Len() == 0 {
			b.refused++
			open := b.authed
			b.mu.Unlock()
			return nil, wire.Errorf(wire.CodeResourceExhausted, "too many connections (%d open, all authenticated; the budget is %d)", open, b.max)
		}
		victim = b.pending.Remove(b.pending.Front()).(*Slot)
		victim.elem, victim.released = nil, true
		b.evicted++
	}
	s := &Slot{b: b, evict: evict}
	s.elem = b.pending.PushBack(s)
	b.mu.Unlock()
	if victim != nil {
		victim.evict()
	}
	return s, nil
}

// Authenticate makes s an authenticated connection of uid; again with the
// same uid it does nothing. It fails with resource_exhausted when uid
// holds PerUser authenticated connections already, or when s was evicted.
func (s *Slot) Authenticate(uid uint32) error {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case s.released:
		return wire.Errorf(wire.CodeResourceExhausted, "the connection was closed to make room for others")
	case s.authed && s.uid == uid:
		return nil
	case uid != 0 && uid != b.self && b.byUser[uid] >= b.perUser:
		return wire.Errorf(wire.CodeResourceExhausted, "uid %d holds %d connections (the per-user share of the budget)", uid, b.perUser)
	case s.authed: // one connection, another key: it now counts for uid
		if b.byUser[s.uid]--; b.byUser[s.uid] <= 0 {
			delete(b.byUser, s.uid)
		}
	default:
		b.pending.Remove(s.elem)
		s.elem = nil
		b.authed++
	}
	s.authed, s.uid = true, uid
	b.byUser[uid]++
	return nil
}

// Pending reports whether s has not authenticated (and is still open).
func (s *Slot) Pending() bool {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return !s.authed && !s.released
}

// Release gives the slot back; a second call, or one after an eviction,
// does nothing.
func (s *Slot) Release() {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.released {
		return
	}
	s.released = true
	if s.authed {
		b.authed--
		if b.byUser[s.uid]--; b.byUser[s.uid] <= 0 {
			delete(b.byUser, s.uid)
		}
		return
	}
	b.pending.Remove(s.elem)
	s.elem = nil
}

// AuthenticateService makes s an authenticated connection of the daemon's
// own (a metrics scraper that passed its key): exempt from the per-user
// cap, bounded by its listener's Limit instead.
func (s *Slot) AuthenticateService() error { return s.Authenticate(s.b.self) }
