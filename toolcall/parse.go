package toolcall

import (
	"crypto/rand"
	"strings"
)

// ParseOptions shape a Parser.
type ParseOptions struct {
	Format Format
	// Calls: read tool calls (tools were given and tool_choice is not none).
	Calls bool
	// Reasoning: the template's reasoning tags (nil: it has none);
	// ReasoningOpen: the prompt opened the block; ReasoningClosed: the
	// prompt closed one (thinking off), so the answer opens none and no
	// text is held waiting for one.
	Reasoning       *Tags
	ReasoningOpen   bool
	ReasoningClosed bool
	// KeepReasoning leaves the block in the content as written
	// (reasoning_format none); calls are still read only after it.
	KeepReasoning bool
	// Tools are the request's tools: Qwen3-Coder's arguments are typed by
	// their schemas (and its bare <function=NAME> opens a call).
	Tools []Tool
	// NewID makes a call's id when the model wrote none; nil: "call_"
	// and 24 random letters and digits (9 for Mistral Nemo).
	NewID func() string
}

// Delta is what one Push adds.
type Delta struct {
	Content, Reasoning string
	Calls              []CallDelta
}

// Empty reports whether d adds nothing.
func (d Delta) Empty() bool { return d.Content == "" && d.Reasoning == "" && len(d.Calls) == 0 }

// CallDelta is a piece of call Index: its first carries the ID and Name.
type CallDelta struct {
	Index     int
	ID, Name  string
	Arguments string
}

// Call is a parsed tool call; Arguments is JSON text.
type Call struct{ ID, Name, Arguments string }

// Parser splits a response's text into content, reasoning and calls as it
// streams in. Text that may be the start of a marker is held until it is
// known not to be; every piece it gives out is final, so the deltas of a
// stream add up to exactly the whole message.
type Parser struct {
	o   ParseOptions
	out Delta

	// Reasoning.
	rstate    int // rsStart, rsIn, rsOut
	rbuf      string
	rlead     bool   // reasoning text has not begun (its leading space is dropped)
	rtrail    string // whitespace held at the reasoning's end
	stripLead bool   // content after the block: its leading whitespace is dropped

	// Calls.
	cstate int
	cbuf   string
	ctrail string // whitespace held at the content's end (it precedes a marker or not)
	reader *callReader
	marker string // the marker that opened the call being read
	r1     r1State
	xml    xmlState
	gemma  gemmaState
	calls  []Call

	// Harmony (gpt-oss): the whole answer is read by harmony.
	h       harmonyState
	started bool // a harmony message began
}

const (
	rsStart = iota
	rsIn
	rsOut
)

// NewParser starts a response.
func NewParser(o ParseOptions) *Parser {
	p := &Parser{o: o, rlead: true}
	switch {
	case o.Reasoning == nil, o.ReasoningClosed && !o.ReasoningOpen:
		p.rstate = rsOut
	case o.ReasoningOpen:
		p.rstate = rsIn
	}
	return p
}

// maxLeadSpace is the most whitespace held at the answer's start while a
// reasoning block may still open after it: a model that writes newlines
// on and on is shown writing them, not silent until it ends.
const maxLeadSpace = 64

// Push reads more text and returns what it adds.
func (p *Parser) Push(text string) Delta {
	p.out = Delta{}
	p.rbuf += text
	if p.o.Format == Harmony {
		p.harmony(false)
		return p.out
	}
	p.reason(false)
	return p.out
}

// Finish ends the text and returns what was held.
func (p *Parser) Finish() Delta {
	p.out = Delta{}
	if p.o.Format == Harmony {
		p.harmony(true)
		return p.out
	}
	p.reason(true)
	p.callsDone()
	return p.out
}

// Calls are the calls read so far (all of them after Finish).
func (p *Parser) Calls() []Call { return p.calls }

func (p *Parser) content(s string) {
	if p.rstate == rsOut && p.stripLead {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			return
		}
		p.stripLead = false
	}
	p.out.Content += s
}

// reason is the reasoning stage: it takes the block off the front of the
// text and hands the rest to the calls stage.
func (p *Parser) reason(final bool) {
	t := p.o.Reasoning
	for p.rbuf != "" {
		switch p.rstate {
		case rsStart:
			lead := strings.TrimLeft(p.rbuf, " \t\r\n")
			switch {
			case strings.HasPrefix(lead, t.Open):
				if p.o.KeepReasoning {
					p.content(p.rbuf[:len(p.rbuf)-len(lead)+len(t.Open)])
				}
				p.rbuf, p.rstate = lead[len(t.Open):], rsIn
				continue
			case !final && strings.HasPrefix(t.Open, lead) && len(p.rbuf)-len(lead) <= maxLeadSpace:
				return // the block may be opening
			}
			p.rstate = rsOut
		case rsIn:
			i := strings.Index(p.rbuf, t.Close)
			if j := p.callEndsThought(); j >= 0 && (i < 0 || j < i) {
				p.thought(p.rbuf[:j])
				if p.o.KeepReasoning {
					p.content(p.rtrail)
				}
				p.rtrail, p.rbuf, p.rstate, p.stripLead = "", p.rbuf[j:], rsOut, false
				continue
			}
			if i < 0 {
				keep := partialSuffix(p.rbuf, t.Close)
				if p.xmlCalls() {
					keep = max(keep, partialSuffix(p.rbuf, hermesOpen))
				}
				if final {
					keep = 0
				}
				p.thought(p.rbuf[:len(p.rbuf)-keep])
				p.rbuf = p.rbuf[len(p.rbuf)-keep:]
				if final {
					p.rtrail = ""
				}
				return
			}
			p.thought(p.rbuf[:i])
			if p.o.KeepReasoning {
				p.content(p.rtrail + t.Close)
			} else {
				p.stripLead = true
			}
			p.rtrail, p.rbuf, p.rstate = "", p.rbuf[i+len(t.Close):], rsOut
		case rsOut:
			s := p.rbuf
			p.rbuf = ""
			p.callText(s)
		}
	}
}

// xmlCalls reports whether Qwen3-Coder's calls are read: a call ends the
// reasoning block that holds it (Qwen3.5 may call before </think>, and
// llama.cpp ends the block there too).
func (p *Parser) xmlCalls() bool { return p.o.Format == Qwen3Coder && p.o.Calls }

// callEndsThought is where a call opens inside the reasoning block, or -1.
func (p *Parser) callEndsThought() int {
	if !p.xmlCalls() {
		return -1
	}
	return strings.Index(p.rbuf, hermesOpen)
}

// thought is text inside the reasoning block: its leading and trailing
// whitespace dropped (held until more text shows it is not trailing).
func (p *Parser) thought(s string) {
	if p.o.KeepReasoning {
		p.content(s)
		return
	}
	if p.rlead {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			return
		}
		p.rlead = false
	}
	body := strings.TrimRight(s, " \t\r\n")
	if body == "" {
		p.rtrail += s
		return
	}
	p.out.Reasoning += p.rtrail + body
	p.rtrail = s[len(body):]
}

// partialSuffix is the length of the longest end of s that begins marker
// (and so may be its first bytes).
func partialSuffix(s, marker string) int {
	for n := min(len(s), len(marker)-1); n > 0; n-- {
		if strings.HasSuffix(s, marker[:n]) {
			return n
		}
	}
	return 0
}

// newID is a call id: the option's, or a random one.
func (p *Parser) newID() string {
	if p.o.NewID != nil {
		return p.o.NewID()
	}
	if p.o.Format == MistralNemo {
		return randomID("", 9)
	}
	return randomID("call_", 24)
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randomID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idChars[int(b[i])%len(idChars)]
	}
	return prefix + string(b)
}

// startCall opens call index len(p.calls).
func (p *Parser) startCall(id, name string) {
	if id == "" {
		id = p.newID()
	}
	p.calls = append(p.calls, Call{ID: id, Name: name})
	p.out.Calls = append(p.out.Calls, CallDelta{Index: len(p.calls) - 1, ID: id, Name: name})
}

// args adds arguments text to the open call.
func (p *Parser) args(s string) {
	if s == "" || len(p.calls) == 0 {
		return
	}
	c := &p.calls[len(p.calls)-1]
	c.Arguments += s
	if n := len(p.out.Calls); n > 0 && p.out.Calls[n-1].Index == len(p.calls)-1 {
		p.out.Calls[n-1].Arguments += s
		return
	}
	p.out.Calls = append(p.out.Calls, CallDelta{Index: len(p.calls) - 1, Arguments: s})
}

// endCall closes the open call; a call without arguments gets {}.
func (p *Parser) endCall() {
	if len(p.calls) > 0 && p.calls[len(p.calls)-1].Arguments == "" {
		p.args("{}")
	}
}
