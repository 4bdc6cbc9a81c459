package engine

import (
	"sync"
	"testing"
	"time"
)

// TestComputeGateTakesTurns: waiters get the gate in the order they
// asked, and a holder that asks again goes behind them.
func TestComputeGateTakesTurns(t *testing.T) {
	g := NewTurns()
	holder := g.Seat()
	holder.Acquire()
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		seat := g.Seat()
		go func() {
			defer wg.Done()
			seat.Acquire()
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			seat.Release()
		}()
		for { // each waiter queues before the next starts
			g.mu.Lock()
			n := len(g.queue)
			g.mu.Unlock()
			if n == i+1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	holder.Release()
	holder.Acquire() // behind all four
	mu.Lock()
	got := append([]int(nil), order...)
	mu.Unlock()
	holder.Release()
	wg.Wait()
	if len(got) != 4 || got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 3 {
		t.Fatalf("order %v, want 0 1 2 3 before the holder's second turn", got)
	}
}

// TestSeatContended: a seat sees contention only from another seat's
// recent turn.
func TestSeatContended(t *testing.T) {
	g := NewTurns()
	now := time.Unix(100, 0)
	g.now = func() time.Time { return now }
	a, b := g.Seat(), g.Seat()
	a.Acquire()
	a.Release()
	if a.Contended() || !b.Contended() {
		t.Fatalf("after a's turn: a %v b %v, want only b contended", a.Contended(), b.Contended())
	}
	now = now.Add(contendedWindow)
	if b.Contended() {
		t.Error("a's turn long ago still counts")
	}
}
