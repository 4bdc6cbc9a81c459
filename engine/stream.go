package engine

import (
	"context"
	"sync"
)

// Stream delivers one request's events. The engine appends without ever
// blocking; a slow reader only lets events pile up (token deltas are merged
// so the backlog stays one delta plus the terminal event).
type Stream struct {
	id     uint64
	mu     sync.Mutex
	events []Event
	done   bool // the terminal event was appended
	notify chan struct{}
	stop   func() bool // detaches the context watcher; guarded by mu
}

func newStream(id uint64) *Stream {
	return &Stream{id: id, notify: make(chan struct{}, 1)}
}

// ID returns the engine's id for the request, for Cancel.
func (s *Stream) ID() uint64 { return s.id }

// push appends ev, merging it into a pending token delta. Called by the engine loop only.
func (s *Stream) push(ev Event) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	if n := len(s.events); n > 0 && !ev.Done && !s.events[n-1].Done {
		last := &s.events[n-1]
		last.Text += ev.Text
		last.Tokens = append(last.Tokens, ev.Tokens...)
		last.Logprobs = append(last.Logprobs, ev.Logprobs...)
	} else {
		s.events = append(s.events, ev)
	}
	var stop func() bool
	if ev.Done {
		s.done = true
		stop = s.stop
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	if stop != nil {
		stop()
	}
}

// setStop records the detach function of the context watcher. The loop may
// have ended the request already (it is live before Submit returns): then
// the watcher is detached at once.
func (s *Stream) setStop(stop func() bool) {
	s.mu.Lock()
	done := s.done
	if !done {
		s.stop = stop
	}
	s.mu.Unlock()
	if done {
		stop()
	}
}

// Recv returns the next event and true; once the terminal event has been
// read it returns false. It returns ctx.Err() if ctx ends first.
func (s *Stream) Recv(ctx context.Context) (Event, bool, error) {
	for {
		s.mu.Lock()
		if len(s.events) > 0 {
			ev := s.events[0]
			s.events = s.events[1:]
			s.mu.Unlock()
			return ev, true, nil
		}
		done := s.done
		s.mu.Unlock()
		if done {
			return Event{}, false, nil
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Event{}, false, ctx.Err()
		}
	}
}

// Wait drains the stream and returns the whole result: all text, all token
// ids and the terminal event.
func (s *Stream) Wait(ctx context.Context) (text string, tokens []int, done Event, err error) {
	for {
		ev, ok, err := s.Recv(ctx)
		if err != nil || !ok {
			return text, tokens, done, err
		}
		text += ev.Text
		tokens = append(tokens, ev.Tokens...)
		if ev.Done {
			done = ev
		}
	}
}
