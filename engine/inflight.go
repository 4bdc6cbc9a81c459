package engine

import (
	"slices"
	"time"
)

// RequestInfo describes one live request for operators (batchctl stats):
// no prompt text, only who, where and how far.
type RequestInfo struct {
	ID              uint64        `json:"id"`
	Owner           uint32        `json:"owner"`
	Channel         string        `json:"channel"`
	State           string        `json:"state"` // waiting or running
	Age             time.Duration `json:"age"`
	PromptTokens    int           `json:"prompt_tokens"`
	GeneratedTokens int           `json:"generated_tokens"`
	MaxTokens       int           `json:"max_tokens"`
	CancelRequested bool          `json:"cancel_requested"`
}

// Requests lists up to limit live requests, oldest first. It reads only
// what Submit set and counters the loop publishes, never the loop's state.
func (e *Engine) Requests(limit int) []RequestInfo {
	now := e.now()
	e.mu.Lock()
	out := make([]RequestInfo, 0, min(len(e.live), limit))
	for id, rs := range e.live {
		st := "waiting"
		if rs.started.Load() {
			st = "running"
		}
		out = append(out, RequestInfo{ID: id, Owner: rs.req.Owner, Channel: rs.req.Channel, State: st,
			Age: now.Sub(rs.arrival), PromptTokens: len(rs.req.Tokens), GeneratedTokens: int(rs.generated.Load()),
			MaxTokens: rs.req.MaxTokens, CancelRequested: rs.cancelled})
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b RequestInfo) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
