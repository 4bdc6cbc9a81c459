package engine

import (
	"sync"
	"testing"
	"time"
)

// TestComputeGateTakesTurns: waiters get the gate in the order they
// asked, and a holder that asks again goes behind them.
func TestComputeGateTakesTurns(t *testing.T) {
	g := NewComputeGate()
	g.Acquire()
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Acquire()
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			g.Release()
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
	g.Release()
	g.Acquire() // behind all four
	mu.Lock()
	got := append([]int(nil), order...)
	mu.Unlock()
	g.Release()
	wg.Wait()
	if len(got) != 4 || got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 3 {
		t.Fatalf("order %v, want 0 1 2 3 before the holder's second turn", got)
	}
}
