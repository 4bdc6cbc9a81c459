package engine

import "time"

// Observer receives the engine's measurements as they happen, for metrics
// exporters. The step loop calls it: implementations must not block.
type Observer interface {
	// FirstToken: time to first token and prefill time (first scheduled to first token).
	FirstToken(channel string, ttft, prefill time.Duration)
	// InterToken: the gap between two tokens of one request.
	InterToken(channel string, d time.Duration)
	// Finished: one request ended.
	Finished(r FinishRecord)
	// Step: a forward pass ran seqs sequences over tokens tokens.
	Step(seqs, tokens int)
}

// FinishRecord describes an ended request.
type FinishRecord struct {
	Channel          string
	Reason           FinishReason
	Queue            time.Duration // arrival to first scheduled (0 if never)
	Decode           time.Duration // first token to end (0 if none)
	E2E              time.Duration
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int
}

type nopObserver struct{}

func (nopObserver) FirstToken(string, time.Duration, time.Duration) {}
func (nopObserver) InterToken(string, time.Duration)                {}
func (nopObserver) Finished(FinishRecord)                           {}
func (nopObserver) Step(int, int)                                   {}
