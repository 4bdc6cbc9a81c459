package engine

import (
	"sync"
	"time"
)

// Turns lets engines that share the machine's cores take turns, a
// forward pass each, in the order they asked: one model's step runs, then
// the other's, so the cores are never run by two backends' worker pools at
// once. A busy engine also shortens its prefill chunks while another one
// uses the gate (Seat.Contended), so that a long prompt on one model
// delays the other's next token by about contendedStep, not by the whole
// prompt. The zero value is not usable; make one with NewTurns.
type Turns struct {
	mu    sync.Mutex
	held  bool
	queue []chan struct{} // waiters, first come first served
	last  []time.Time     // each seat's last acquire
	now   func() time.Time
}

// contendedStep is the forward pass an engine aims for while another
// engine uses the gate; contendedWindow is how recently the other must
// have used it to count.
const (
	contendedStep   = 50 * time.Millisecond
	contendedWindow = 200 * time.Millisecond
)

// NewTurns makes an open gate.
func NewTurns() *Turns { return &Turns{now: time.Now} }

// Seat is one engine's place at the gate.
type Seat struct {
	g  *Turns
	id int
}

// Seat gives an engine its place.
func (g *Turns) Seat() *Seat {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last = append(g.last, time.Time{})
	return &Seat{g, len(g.last) - 1}
}

// Acquire waits for the gate; the holder is handed it directly by
// Release, so a waiter is never overtaken.
func (s *Seat) Acquire() {
	g := s.g
	g.mu.Lock()
	g.last[s.id] = g.now()
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
func (s *Seat) Release() {
	g := s.g
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

// Contended reports whether another seat used the gate lately.
func (s *Seat) Contended() bool {
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for id, t := range g.last {
		if id != s.id && !t.IsZero() && now.Sub(t) < contendedWindow {
			return true
		}
	}
	return false
}
