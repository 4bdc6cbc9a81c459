package serve

import (
	"context"
	"errors"
	"strings"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/serve/models"
	"github.com/batchd/batchd/tokenizer"
	"github.com/batchd/batchd/toolcall"
)

// stream adapts an engine stream to the ipc one.
type stream struct {
	st     *engine.Stream
	prompt []int
	tok    *tokenizer.Tokenizer
	// parser splits a chat answer into content, reasoning and calls (nil:
	// the text is the content); done is the terminal event, held while the
	// parser's last delta goes out first.
	parser *toolcall.Parser
	done   *ipc.Event
	// lease holds the model until the terminal event is read.
	lease *models.Lease
}

func (s *stream) release() {
	if s.lease != nil {
		s.lease.Release()
	}
}

func (s *stream) RequestID() uint64   { return s.st.ID() }
func (s *stream) PromptTokens() []int { return s.prompt }

func (s *stream) Next(ctx context.Context) (ipc.Event, error) {
	if s.done != nil {
		ev := *s.done
		s.done = nil
		return ev, nil
	}
	ev, ok, err := s.st.Recv(ctx)
	if err != nil {
		s.release()
		return ipc.Event{}, err
	}
	if !ok {
		s.release()
		return ipc.Event{}, errors.New("stream ended without a terminal event")
	}
	if ev.Done {
		s.release()
	}
	if !ev.Done {
		out := ipc.Event{Text: ev.Text, Tokens: ev.Tokens, Logprobs: s.logprobs(ev.Logprobs)}
		if s.parser != nil {
			out.Text, out.Reasoning, out.ToolCalls = deltaEvent(s.parser.Push(ev.Text))
		}
		return out, nil
	}
	d := &wire.Done{FinishReason: string(ev.Finish), StopSequence: ev.StopString, Preemptions: ev.Preemptions,
		Usage: wire.Usage{PromptTokens: ev.Usage.PromptTokens, CompletionTokens: ev.Usage.CompletionTokens,
			CachedPromptTokens: ev.Usage.CachedPromptTokens},
		Timings: wire.Timings{QueueS: ev.Timings.Queue.Seconds(), FirstTokenS: ev.Timings.FirstToken.Seconds(),
			TotalS: ev.Timings.Total.Seconds()}}
	if ev.Err != nil {
		e := wireError(ev.Err)
		d.Code, d.Message = e.Code, e.Message
	}
	if s.parser == nil {
		return ipc.Event{Text: ev.Text, Tokens: ev.Tokens, Done: d}, nil
	}
	last := s.parser.Push(ev.Text)
	fin := s.parser.Finish()
	last.Content += fin.Content
	last.Reasoning += fin.Reasoning
	last.Calls = append(last.Calls, fin.Calls...)
	if calls := s.parser.Calls(); len(calls) > 0 {
		d.ToolCalls = wireCalls(calls)
		if d.FinishReason == string(engine.FinishStop) {
			d.FinishReason = "tool_calls"
		}
	}
	done := ipc.Event{Tokens: ev.Tokens, Done: d}
	if last.Empty() {
		return done, nil
	}
	s.done = &done
	out := ipc.Event{}
	out.Text, out.Reasoning, out.ToolCalls = deltaEvent(last)
	return out, nil
}

// logprobs gives each token its text and bytes for the wire.
func (s *stream) logprobs(lps []sample.Logprob) []wire.Logprob {
	if lps == nil {
		return nil
	}
	out := make([]wire.Logprob, len(lps))
	for i, lp := range lps {
		t := s.tokenLogprob(lp.Alt)
		out[i] = wire.Logprob{Token: t.Token, Logprob: t.Logprob, Text: t.Text, Bytes: t.Bytes}
		if lp.Top != nil {
			out[i].Top = make([]wire.TokenLogprob, len(lp.Top))
			for j, a := range lp.Top {
				out[i].Top[j] = s.tokenLogprob(a)
			}
		}
	}
	return out
}

func (s *stream) tokenLogprob(a sample.Alt) wire.TokenLogprob {
	b := []byte(s.tok.PieceText(a.Token)) // special tokens as written, as llama.cpp shows them
	return wire.TokenLogprob{Token: a.Token, Logprob: a.Logprob, Text: strings.ToValidUTF8(string(b), "\uFFFD"), Bytes: b}
}

// wireError maps an engine error category to its wire code. err must not be nil.
func wireError(err error) *wire.Error {
	var e *wire.Error
	if errors.As(err, &e) {
		return e
	}
	code, category := wire.CodeInternal, engine.ErrInternal
	switch {
	case errors.Is(err, engine.ErrQueueFull):
		code, category = wire.CodeQueueFull, engine.ErrResourceExhausted
	case errors.Is(err, engine.ErrInvalidArgument):
		code, category = wire.CodeInvalidArgument, engine.ErrInvalidArgument
	case errors.Is(err, engine.ErrNotFound):
		code, category = wire.CodeNotFound, engine.ErrNotFound
	case errors.Is(err, engine.ErrResourceExhausted):
		code, category = wire.CodeResourceExhausted, engine.ErrResourceExhausted
	case errors.Is(err, engine.ErrUnavailable), errors.Is(err, context.Canceled):
		code, category = wire.CodeUnavailable, engine.ErrUnavailable
	}
	// The wire code already names the category: drop the engine's own
	// leading "invalid argument: " so the client does not read it twice.
	msg := strings.TrimPrefix(err.Error(), category.Error()+": ")
	return &wire.Error{Code: code, Message: msg}
}
