package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/batchd/batchd/grammar"
)

// Bounds on how a request's grammar waits.
const (
	MaxGrammarTriggers = 32
	maxTriggerBytes    = 128
	maxTagBytes        = 64
	MaxPreserve        = 64
)

// ThinkTags are a reasoning block's tags: the grammar waits the block out
// (a model thinks freely, then its answer is constrained).
type ThinkTags struct {
	Open, Close string
	// Inside: the prompt opened the block (DeepSeek R1's "<think>\n").
	Inside bool
	// Ends are texts that also end the block, and are the grammar's
	// first (Qwen3.5 may open a call before </think>, and llama.cpp ends
	// the block at <tool_call> too).
	Ends []string
}

// maxThinkEnds bounds ThinkTags.Ends.
const maxThinkEnds = 4

// holdPhase is where a request's grammar stands.
type holdPhase uint8

const (
	holdActive     holdPhase = iota // every token fits the grammar
	holdThinkStart                  // the first token: the grammar's, or one that opens a reasoning block
	holdThinking                    // in the block: free until its close tag
	holdAfterThink                  // after the block: whitespace, or the grammar's first token
	holdWaiting                     // lazy: free until a trigger
	holdOff                         // a trigger was followed by text the grammar rejects: free to the end
)

// gate holds a request's grammar back: through a reasoning block, and
// (lazy) until a trigger text appears, as llama.cpp's lazy grammars do
// for tool calls.
type grammarHold struct {
	phase    holdPhase
	think    *ThinkTags
	triggers [][]byte
	lazy     bool
	window   []byte // recent output: a close tag or trigger may span tokens
}

func newHold(r Request) *grammarHold {
	g := &grammarHold{think: r.Think, lazy: len(r.GrammarTriggers) > 0}
	for _, t := range r.GrammarTriggers {
		g.triggers = append(g.triggers, []byte(t))
	}
	switch {
	case g.think != nil && g.think.Inside:
		g.phase = holdThinking
	case g.think != nil:
		g.phase = holdThinkStart
	case g.lazy:
		g.phase = holdWaiting
	default:
		return nil
	}
	return g
}

// checkGate validates the fields that shape a grammar's gate.
func checkHold(r Request, vocab int) []error {
	var errs []error
	if (len(r.GrammarTriggers) > 0 || r.Think != nil) && r.Grammar == nil {
		errs = append(errs, errors.New("grammar triggers and think tags need a grammar"))
	}
	if len(r.GrammarTriggers) > MaxGrammarTriggers {
		errs = append(errs, fmt.Errorf("%d grammar triggers: at most %d", len(r.GrammarTriggers), MaxGrammarTriggers))
	}
	for _, t := range r.GrammarTriggers {
		if t == "" || len(t) > maxTriggerBytes {
			errs = append(errs, fmt.Errorf("a grammar trigger of %d bytes: want 1 to %d", len(t), maxTriggerBytes))
			break
		}
	}
	if t := r.Think; t != nil && (t.Open == "" || t.Close == "" || len(t.Open) > maxTagBytes || len(t.Close) > maxTagBytes ||
		len(t.Ends) > maxThinkEnds || slices.ContainsFunc(t.Ends, func(s string) bool { return s == "" || len(s) > maxTagBytes })) {
		errs = append(errs, fmt.Errorf("think tags: want 1 to %d bytes each, at most %d ends", maxTagBytes, maxThinkEnds))
	}
	if len(r.Preserve) > MaxPreserve {
		errs = append(errs, fmt.Errorf("%d preserved tokens: at most %d", len(r.Preserve), MaxPreserve))
	}
	for _, id := range r.Preserve {
		if id < 0 || id >= vocab {
			errs = append(errs, fmt.Errorf("preserved token %d outside the vocab of %d", id, vocab))
			break
		}
	}
	return errs
}

// constrains reports whether the next token is sampled under the grammar.
func (rs *reqState) constrains() bool {
	if rs.gm == nil {
		return false
	}
	g := rs.hold
	return g == nil || g.phase == holdActive || g.phase == holdThinkStart || g.phase == holdAfterThink
}

// grammarActive reports whether the grammar holds now (so its end ends the request).
func (rs *reqState) grammarActive() bool {
	return rs.gm != nil && (rs.hold == nil || rs.hold.phase == holdActive)
}

// opensThink reports whether a token's text opens the reasoning block.
func (g *grammarHold) opensThink(text []byte) bool {
	return g.phase == holdThinkStart && bytes.HasPrefix(bytes.TrimLeft(text, " \t\r\n"), []byte(g.think.Open))
}

// maxSpaceAfterThink bounds the whitespace tokens taken freely after a
// reasoning block, before the grammar's first.
const maxSpaceAfterThink = 8

// freeToken reports whether the gate takes a token that the grammar need
// not: one that opens the reasoning block, or whitespace after it.
func (g *grammarHold) freeToken(text []byte) bool {
	switch g.phase {
	case holdThinkStart:
		return g.opensThink(text)
	case holdAfterThink:
		return len(text) > 0 && len(bytes.TrimLeft(text, " \t\r\n")) == 0 && len(g.window) < maxSpaceAfterThink
	}
	return false
}

// grammarStep moves the grammar over a token that was not an end token,
// through the gate; the error ends the request.
func (e *Engine) grammarStep(rs *reqState, tok int) error {
	g := rs.hold
	if g == nil || g.phase == holdActive {
		return e.acceptConstrained(rs, tok)
	}
	text := e.grammarVocab().text[tok]
	if e.grammarVocab().control[tok] && !rs.preserved(tok) {
		text = nil // not in the output
	}
	switch g.phase {
	case holdThinkStart:
		switch {
		case g.opensThink(text):
			g.phase = holdThinking
			t := bytes.TrimLeft(text, " \t\r\n")
			return e.afterText(rs, t[len(g.think.Open):])
		case g.lazy:
			g.phase = holdWaiting
			return e.afterText(rs, text)
		}
		g.phase = holdActive
		return e.acceptConstrained(rs, tok)
	case holdAfterThink:
		if g.freeToken(text) {
			g.window = append(g.window, ' ') // counts the whitespace tokens
			return nil
		}
		g.phase, g.window = holdActive, nil
		return e.acceptConstrained(rs, tok)
	case holdThinking, holdWaiting:
		return e.afterText(rs, text)
	}
	return nil
}

// afterText reads free output text: a reasoning block's close tag ends
// the block, a trigger starts the grammar there.
func (e *Engine) afterText(rs *reqState, text []byte) error {
	g := rs.hold
	g.window = append(g.window, text...)
	if g.phase == holdThinking {
		i := bytes.Index(g.window, []byte(g.think.Close))
		keep := len(g.think.Close) - 1
		for _, end := range g.think.Ends {
			if j := bytes.Index(g.window, []byte(end)); j >= 0 && (i < 0 || j < i) {
				rest := slices.Clone(g.window[j:]) // the end is the grammar's
				g.window = g.window[:0]
				if g.lazy {
					g.phase = holdWaiting
					return e.afterText(rs, rest)
				}
				g.phase = holdActive
				return e.feedGrammar(rs, rest)
			}
			keep = max(keep, len(end)-1)
		}
		if i < 0 {
			g.window = tail(g.window, keep)
			return nil
		}
		rest := slices.Clone(g.window[i+len(g.think.Close):])
		g.window = g.window[:0]
		if g.lazy {
			g.phase = holdWaiting
			return e.afterText(rs, rest)
		}
		// The whitespace a model writes after the block is not the grammar's.
		if rest = bytes.TrimLeft(rest, " \t\r\n"); len(rest) == 0 {
			g.phase = holdAfterThink
			return nil
		}
		g.phase = holdActive
		return e.feedGrammar(rs, rest)
	}
	if g.phase != holdWaiting {
		return nil
	}
	at, longest := -1, 0
	for _, t := range g.triggers {
		if i := bytes.Index(g.window, t); i >= 0 && (at < 0 || i < at) {
			at = i
		}
		longest = max(longest, len(t))
	}
	if at < 0 {
		g.window = tail(g.window, longest-1)
		return nil
	}
	rest := slices.Clone(g.window[at:])
	g.window = nil
	g.phase = holdActive
	return e.feedGrammar(rs, rest)
}

// feedGrammar gives the grammar text written before it took hold; text it
// rejects turns it off for the rest of the request (the output was free
// there, and stays so), as a model wrote a trigger it did not follow.
func (e *Engine) feedGrammar(rs *reqState, text []byte) error {
	if len(text) == 0 {
		return nil
	}
	err := rs.gm.Accept(text)
	if errors.Is(err, grammar.ErrTooComplex) {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if err != nil {
		rs.hold.phase = holdOff
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if n < 0 {
		n = 0
	}
	if len(b) <= n {
		return b
	}
	return append(b[:0], b[len(b)-n:]...)
}

// preserved reports whether the request keeps control token id's text.
func (rs *reqState) preserved(id int) bool { return slices.Contains(rs.req.Preserve, id) }
