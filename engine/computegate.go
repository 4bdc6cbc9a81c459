package engine

import "sync"

// ComputeGate lets engines that share the machine's cores take turns, a
// forward pass each, in the order they asked: one model's long prefill
// step (bounded by its chunk budget) runs, then the other's decode step,
// so neither starves and the cores are never run by two backends' worker
// pools at once. The zero value is not usable; make one with NewComputeGate.
type ComputeGate struct {
	mu    sync.Mutex
	held  bool
	queue []chan struct{} // waiters, first come first served
}

// NewComputeGate makes an open gate.
func NewComputeGate() *ComputeGate { return &ComputeGate{} }

// Acquire waits for the gate; the holder is handed it directly by
// Release, so a waiter is never overtaken.
func (g *ComputeGate) Acquire() {
	g.mu.Lock()
	if !g.held {
		g.held = true
		g.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	g.queue = append(g.queue, ch)
	g.mu.Unlock()
	<-ch
}

// Release hands the gate to the longest waiter, or opens it.
func (g *ComputeGate) Release() {
	g.mu.Lock()
	if len(g.queue) > 0 {
		ch := g.queue[0]
		g.queue = g.queue[1:]
		g.mu.Unlock()
		close(ch)
		return
	}
	g.held = false
	g.mu.Unlock()
}
