package ipc

import (
	"sync"
	"time"
)

// rateLimiter lets a warning through once per interval per key, so that a
// peer who repeats what triggers it (connecting while refused, opening
// connections past the cap) cannot fill the log. allow says how many were
// held back since the last one let through.
type rateLimiter struct {
	every time.Duration
	now   func() time.Time // default time.Now

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

func (r *rateLimiter) allow(key string) (suppressed int, ok bool) {
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	t := now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last, r.held = map[string]time.Time{}, map[string]int{}
	}
	if last, seen := r.last[key]; seen && t.Sub(last) < r.every {
		r.held[key]++
		return 0, false
	}
	n := r.held[key]
	r.last[key], r.held[key] = t, 0
	return n, true
}
