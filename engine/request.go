package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/batchd/batchd/tokenizer"
	"log/slog"
	"time"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/sample"
)

// Error categories. Engine errors wrap one of these so that callers (the ipc
// layer) can map them to wire codes with errors.Is.
var (
	ErrInvalidArgument   = errors.New("invalid argument")
	ErrNotFound          = errors.New("not found")
	ErrResourceExhausted = errors.New("resource exhausted")
	ErrUnavailable       = errors.New("unavailable")
	ErrInternal          = errors.New("internal error")
)

// ErrQueueFull is returned by Submit when the waiting queue is at its limit.
// It wraps ErrResourceExhausted.
var ErrQueueFull = fmt.Errorf("%w: queue full", ErrResourceExhausted)

// ErrDeadlineExceeded ends a request whose deadline passed before it could start.
var ErrDeadlineExceeded = fmt.Errorf("%w: deadline exceeded before the request could start", ErrUnavailable)

// ErrClosed is returned by Submit once the engine is draining or stopped.
var ErrClosed = fmt.Errorf("%w: engine stopped", ErrUnavailable)

// Limits on what one request may ask for, so that a careless or hostile
// client cannot make every step slower for everyone: stop strings are
// matched in the step loop at every token. llama.cpp's server and vLLM take
// a few stop strings in practice; OpenAI's API takes four.
const (
	MaxStopStrings  = 32
	MaxStopBytes    = 128 // per stop string
	MaxStopTokenIDs = 128
	// MaxCacheSaltBytes bounds a cache_salt (it is hashed once per request).
	MaxCacheSaltBytes = 256
)

// Request is one generation job.
type Request struct {
	Prompt string // encoded with the vocabulary's special tokens (BOS) when Tokens is nil
	Tokens []int  // prompt token ids, used as given (include BOS yourself)
	// LiteralSpecial keeps special-token text in Prompt as text; by default
	// it becomes those tokens, as in llama.cpp's server.
	LiteralSpecial bool
	MaxTokens      int // generated tokens at most; 0 = up to the context
	Sampling       sample.Params
	Stop           []string // end the text before any of these; not emitted
	StopTokenIDs   []int    // end when sampled, in addition to the model's EOS/BOS
	IgnoreEOS      bool     // do not stop on the model's EOS/BOS (benchmarks: fixed output lengths)
	// Logprobs reports each generated token's log-probability, with the
	// TopLogprobs (at most sample.MaxTopLogprobs) most likely alternatives.
	Logprobs    bool
	TopLogprobs int
	Priority    int    // higher runs first under the priority policy
	Channel     string // QoS channel (realtime, standard, bulk); "" is standard
	// Deadline: the first token is due within this long of arrival, or the
	// request is rejected (ErrDeadlineExceeded); 0 takes the channel's default.
	Deadline time.Duration
	Owner    uint32 // opaque to the engine (the ipc layer puts the peer uid here)
	// CacheSalt gives the request a prefix cache of its own: it shares
	// cached blocks only with requests of the same salt ("" is the shared
	// cache). The daemon salts an isolated channel's requests by user.
	CacheSalt string
	// Grammar constrains the output to its language (structured output):
	// every token fits it, end tokens come only where it may end, and the
	// request finishes with FinishStop when nothing more may follow.
	Grammar *grammar.Grammar
	// GrammarTriggers make Grammar lazy (tool_choice auto): the output is
	// free until one of these texts appears in it, and the grammar holds
	// from the text's first byte on (as llama.cpp's lazy grammars).
	GrammarTriggers []string
	// Think: the grammar waits out a reasoning block, one the prompt
	// opened or that the first token opens.
	Think *ThinkTags
	// Preserve are control tokens whose text the output keeps and a
	// grammar may match (a tool-call format's markers, [TOOL_CALLS]);
	// other control tokens write nothing and no grammar takes them.
	Preserve []int
	// Embed, when set, makes this an embedding request (see Embed).
	Embed *Embed
	// Prefill computes the prompt into the prefix cache and generates
	// nothing (warming the cache ahead of a peak): the request ends with
	// FinishStop once its prompt is computed; its full blocks stay cached.
	Prefill bool
}

// LogValue keeps prompt text out of logs.
func (r Request) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("prompt_bytes", len(r.Prompt)), slog.Int("prompt_tokens", len(r.Tokens)),
		slog.Int("max_tokens", r.MaxTokens), slog.Int("priority", r.Priority))
}

// contextRoom is what the context leaves after r's prompt (an embedding's
// max_tokens is 1: the KV holds every prompt token, nothing is generated,
// and it may fill the context), with r's problems of length.
func contextRoom(r *Request, context int) (int, []error) {
	var errs []error
	if r.Embed != nil {
		errs = append(errs, checkEmbed(*r)...)
		r.MaxTokens = 1
	}
	room := context - len(r.Tokens)
	if r.Embed != nil && room >= 0 {
		room = 1
	}
	if room <= 0 {
		errs = append(errs, fmt.Errorf("prompt of %d tokens leaves no room in the context of %d", len(r.Tokens), context))
	} else if r.MaxTokens > room {
		errs = append(errs, fmt.Errorf("prompt of %d tokens plus max_tokens %d exceeds the context of %d",
			len(r.Tokens), r.MaxTokens, context))
	}
	return room, errs
}

// FinishReason says why a request ended.
type FinishReason string

// The finish reasons of a terminal event.
const (
	FinishStop      FinishReason = "stop"      // a stop token or stop string
	FinishLength    FinishReason = "length"    // max tokens or the context
	FinishCancelled FinishReason = "cancelled" // Cancel, context cancellation or shutdown
	FinishError     FinishReason = "error"
)

// Usage counts a request's tokens.
type Usage struct {
	PromptTokens       int `json:"prompt_tokens"`
	CompletionTokens   int `json:"completion_tokens"`
	CachedPromptTokens int `json:"cached_prompt_tokens"`
}

// Timings measure a request's life.
type Timings struct {
	Queue      time.Duration `json:"queue"`       // arrival to first scheduled
	FirstToken time.Duration `json:"first_token"` // arrival to first token
	Total      time.Duration `json:"total"`       // arrival to the terminal event
}

// Event is one item of a request's stream: token deltas, then exactly one
// terminal event (Done true).
type Event struct {
	Text   string // text delta; never splits a UTF-8 character
	Tokens []int  // token ids this delta covers
	// Logprobs, when the request asked, has one entry per token in Tokens.
	Logprobs []sample.Logprob

	Done        bool
	Finish      FinishReason
	StopString  string    // the stop string that ended the text (Finish stop), if one did
	Embedding   []float32 // an embedding request's vector (terminal event)
	Err         error     // set when Finish is "error" or "cancelled" by shutdown
	Usage       Usage
	Timings     Timings
	Preemptions int // times the request was preempted and recomputed
}

// promptTokens returns a copy of r.Tokens, or Prompt encoded, once its
// bytes cannot already exceed the context.
func promptTokens(r Request, m *model.Model) ([]int, error) {
	if r.Tokens != nil {
		return append([]int(nil), r.Tokens...), nil
	}
	if n := m.Tokenizer.MinTokens(r.Prompt); n+1 > m.Config.Context {
		return nil, fmt.Errorf("%w: prompt of %d bytes is at least %d tokens: more than the context of %d",
			ErrInvalidArgument, len(r.Prompt), n+1, m.Config.Context)
	}
	return m.Tokenizer.Tokenize(context.Background(), r.Prompt,
		tokenizer.Options{AddSpecial: true, ParseSpecial: !r.LiteralSpecial})
}

// prepare validates r against the model and fills defaults.
func prepare(r Request, m *model.Model, maxSeqBlocks, blockSize int) (Request, error) {
	c := m.Config
	var err error
	if r.Tokens, err = promptTokens(r, m); err != nil {
		return r, err
	}
	var errs []error
	if len(r.Tokens) == 0 {
		errs = append(errs, errors.New("empty prompt"))
	}
	errs = append(errs, checkKind(r, m)...)
	for _, t := range r.Tokens {
		if t < 0 || t >= c.Vocab {
			errs = append(errs, fmt.Errorf("token id %d outside the vocab of %d", t, c.Vocab))
			break
		}
	}
	if len(r.Stop) > MaxStopStrings {
		errs = append(errs, fmt.Errorf("%d stop strings: at most %d", len(r.Stop), MaxStopStrings))
	}
	if len(r.StopTokenIDs) > MaxStopTokenIDs {
		errs = append(errs, fmt.Errorf("%d stop token ids: at most %d", len(r.StopTokenIDs), MaxStopTokenIDs))
	}
	for _, t := range r.StopTokenIDs {
		if t < 0 || t >= c.Vocab {
			errs = append(errs, fmt.Errorf("stop token id %d outside the vocab of %d", t, c.Vocab))
			break
		}
	}
	for _, s := range r.Stop {
		if s == "" {
			errs = append(errs, errors.New("empty stop string"))
			break
		}
		if len(s) > MaxStopBytes {
			errs = append(errs, fmt.Errorf("stop string of %d bytes: at most %d", len(s), MaxStopBytes))
			break
		}
	}
	errs = append(errs, checkHold(r, c.Vocab)...)
	if r.TopLogprobs < 0 || r.TopLogprobs > sample.MaxTopLogprobs || (r.TopLogprobs > 0 && !r.Logprobs) {
		errs = append(errs, fmt.Errorf("top_logprobs %d: want 0 to %d, with logprobs", r.TopLogprobs, sample.MaxTopLogprobs))
	}
	if err := r.Sampling.Validate(); err != nil {
		errs = append(errs, err)
	}
	if r.Deadline < 0 {
		errs = append(errs, fmt.Errorf("deadline %v must be >= 0", r.Deadline))
	}
	if r.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("max_tokens %d must be >= 0", r.MaxTokens))
	}
	room, roomErr := contextRoom(&r, c.Context)
	if roomErr != nil {
		errs = append(errs, roomErr...)
	}
	if err := errors.Join(errs...); err != nil {
		return r, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if r.Channel == "" {
		r.Channel = "standard"
	}
	if r.MaxTokens == 0 {
		r.MaxTokens = max(min(room, maxSeqBlocks*blockSize-len(r.Tokens)+1), 1)
	}
	// The sequence's last KV slot is for its last-but-one token.
	if need := (len(r.Tokens) + r.MaxTokens - 1 + blockSize - 1) / blockSize; need > maxSeqBlocks {
		if (len(r.Tokens)+blockSize-1)/blockSize > maxSeqBlocks {
			return r, fmt.Errorf("%w: prompt of %d tokens needs %d KV blocks, the pool has %d",
				ErrInvalidArgument, len(r.Tokens), (len(r.Tokens)+blockSize-1)/blockSize, maxSeqBlocks)
		}
		return r, fmt.Errorf("%w: prompt of %d tokens plus max_tokens %d needs %d KV blocks, the pool has %d",
			ErrInvalidArgument, len(r.Tokens), r.MaxTokens, need, maxSeqBlocks)
	}
	return r, nil
}

// checkKind refuses what the request's kind (generation, embedding,
// prefill) and the model cannot do together.
func checkKind(r Request, m *model.Model) []error {
	var errs []error
	if r.Prefill && (r.Embed != nil || r.Grammar != nil || r.Logprobs) {
		errs = append(errs, errors.New("a prefill generates nothing: no embedding, grammar or logprobs"))
	}
	switch {
	case r.Embed == nil && m.Rank != nil:
		errs = append(errs, fmt.Errorf("%s is a reranker: it scores pairs and does not generate", m.Config.Arch))
	case r.Embed == nil && !m.Generates():
		errs = append(errs, fmt.Errorf("%s is an embedding model: it does not generate", m.Config.Arch))
	case r.Embed != nil && (r.Embed.Pooling == PoolRank) != (m.Rank != nil):
		errs = append(errs, fmt.Errorf("rank pooling is a reranker's, and a reranker pools only so (pooling %v)", r.Embed.Pooling))
	}
	if len(r.CacheSalt) > MaxCacheSaltBytes {
		errs = append(errs, fmt.Errorf("cache_salt of %d bytes: at most %d", len(r.CacheSalt), MaxCacheSaltBytes))
	}
	return errs
}
