package sched

import (
	"time"

	"github.com/batchd/batchd/kvcache"
)

// SeqStatus is where a sequence is in its life.
type SeqStatus int

// Sequence states.
const (
	SeqWaiting SeqStatus = iota
	SeqRunning
	SeqFinished
)

func (s SeqStatus) String() string {
	return [...]string{"waiting", "running", "finished"}[s]
}

// Sequence is the scheduler's view of a request: its tokens (prompt, then
// generated) and how many of them have their KV computed.
type Sequence struct {
	ID        uint64
	Priority  int
	Channel   string
	Owner     uint32
	Deadline  time.Time // first token due by; zero = none. Past it while waiting: expired
	Padding   bool      // ended, but holds its row until its request-level batch ends
	Arrival   time.Time
	Tokens    []int
	PromptLen int
	MaxTokens int
	Computed  int // tokens whose K/V are in the cache
	Status    SeqStatus

	Preemptions  int
	CachedTokens int       // prompt tokens served from the prefix cache at first admission
	FirstSched   time.Time // zero until first scheduled
	// Embed: the prompt is all there is (an embedding); every token is
	// computed, none served from the prefix cache.
	Embed bool
	// Prefill: the prompt is computed into the cache, nothing sampled.
	Prefill bool
	// Salt roots its prefix-cache chain (kvcache.Salt of Request.CacheSalt):
	// it shares blocks only with sequences of the same salt.
	Salt kvcache.Hash
	// Draft: tokens proposed to follow Tokens (speculative decoding),
	// verified in the sequence's next decode share when there is room.
	Draft []int
	order uint64
}

// Generated returns how many tokens the sequence has produced.
func (s *Sequence) Generated() int { return len(s.Tokens) - s.PromptLen }

// Scheduled is one sequence's share of a step: tokens [Start, Start+N).
type Scheduled struct {
	Seq    *Sequence
	Start  int
	N      int
	Logits bool // the share ends at the last known token: sample the next
	Hidden bool // an embedding's share: its tokens' final hidden states
	// Draft follows the share's last token in the forward pass, each with
	// its logits: verified, not yet part of Tokens.
	Draft []int
}

// Step is the plan for one forward pass.
type Step struct {
	Now       time.Time
	Seqs      []Scheduled
	Preempted []*Sequence // moved back to waiting this step, KV freed
	Expired   []*Sequence // removed from waiting: their deadline passed before they started
	Released  []*Sequence // padding rows freed: their request-level batch ended
	Tokens    int         // tokens scheduled, at most the token budget
}

func (st *Step) add(seq *Sequence, n int) {
	st.Seqs = append(st.Seqs, Scheduled{Seq: seq, Start: seq.Computed, N: n,
		Logits: !seq.Embed && !seq.Prefill && seq.Computed+n == len(seq.Tokens), Hidden: seq.Embed})
	st.Tokens += n
	if seq.FirstSched.IsZero() {
		seq.FirstSched = st.Now
	}
}
