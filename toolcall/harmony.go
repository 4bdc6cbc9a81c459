package toolcall

import "strings"

// Harmony's markers (gpt-oss): a message is <|start|>ROLE, a header
// (<|channel|>NAME, a recipient " to=functions.NAME", a content type
// "<|constrain|>json" or " json"), <|message|>, the body, and <|end|>,
// <|call|> (a tool call; it ends the turn) or <|return|> (the answer).
const (
	hStart     = "<|start|>"
	hEnd       = "<|end|>"
	hMessage   = "<|message|>"
	hChannel   = "<|channel|>"
	hConstrain = "<|constrain|>"
	hCall      = "<|call|>"
	hReturn    = "<|return|>"
	// hTo opens a recipient; a call's is " to=functions.NAME".
	hTo        = " to="
	hFunctions = "functions."
)

// harmonyEnds are the texts that end a message's body: its own end, a
// call, the answer's end, and (a model's habit) a new message or channel
// begun without <|end|>.
var harmonyEnds = []string{hEnd, hCall, hReturn, hStart, hChannel}

// maxHeaderBytes bounds a message's header: past it the text is not
// harmony and is content as written.
const maxHeaderBytes = 256

// harmonyState is where a harmony answer stands.
type harmonyState struct {
	stage int
	kind  int // what the open message's body is
	// raw is the header as written, kept for reasoning_format none.
	raw string
}

const (
	hsHeader = iota // between messages, or in a header: up to <|message|>
	hsBody          // in a message's body
	hsPlain         // not harmony: content to the end
)

const (
	hkContent   = iota // final, or a commentary preamble: content
	hkReasoning        // analysis: reasoning
	hkCall             // to=functions.NAME: a call's arguments
	hkDrop             // to another recipient (a built-in tool): not shown
)

// harmony reads the answer, as llama.cpp's gpt-oss parser does: analysis
// is reasoning, final and commentary without a recipient are content,
// a message to functions.NAME on commentary or analysis (the recipient in
// the role or the channel header) is a call, and one to any other
// recipient is dropped.
func (p *Parser) harmony(final bool) {
	for p.rbuf != "" {
		var more bool
		switch p.h.stage {
		case hsHeader:
			more = p.harmonyHeader(final)
		case hsBody:
			more = p.harmonyBody(final)
		default:
			p.content(p.rbuf)
			p.rbuf = ""
		}
		if !more {
			break
		}
	}
	if final {
		if p.h.stage == hsBody && p.h.kind == hkCall {
			p.endCall()
		}
		p.rbuf = "" // a header cut off: markup, not text
	}
}

// harmonyHeader reads a header up to <|message|>; false: it needs more.
func (p *Parser) harmonyHeader(final bool) bool {
	lead := strings.TrimLeft(p.rbuf, " \t\r\n")
	if lead == "" {
		return false
	}
	if !strings.HasPrefix(lead, "<|") && !strings.HasPrefix("<|", lead) && !strings.HasPrefix(p.rbuf, hTo) && !strings.HasPrefix(hTo, p.rbuf) {
		if len(p.calls) == 0 && !p.started {
			p.h.stage = hsPlain // no header at all: text as written
			return true
		}
		p.rbuf = lead
	}
	i := strings.Index(p.rbuf, hMessage)
	if i < 0 {
		if len(p.rbuf) > maxHeaderBytes {
			p.h.stage = hsPlain
			return true
		}
		return false
	}
	header := p.rbuf[:i]
	p.h.raw = header + hMessage
	p.rbuf = p.rbuf[i+len(hMessage):]
	p.h.stage, p.started = hsBody, true
	channel, recipient := parseHeader(header)
	switch {
	case strings.HasPrefix(recipient, hFunctions) && p.o.Calls && recipient != hFunctions:
		p.h.kind = hkCall
		p.startCall("", recipient[len(hFunctions):])
	case recipient != "" && recipient != "assistant":
		p.h.kind = hkDrop
	case channel == "analysis":
		p.h.kind = hkReasoning
		if p.o.KeepReasoning {
			p.content(strings.TrimPrefix(p.h.raw, hStart+"assistant"))
		}
	default:
		p.h.kind = hkContent
	}
	return true
}

// parseHeader reads a header's channel and recipient: "<|start|>assistant
// to=R<|channel|>C json", "<|channel|>C to=R <|constrain|>json" and their
// mixes.
func parseHeader(h string) (channel, recipient string) {
	h = " " + strings.TrimPrefix(strings.TrimLeft(h, " \t\r\n"), hStart) // " to=R" may open it
	if i := strings.LastIndex(h, hChannel); i >= 0 {                     // past a stray "<|channel|>commentary"
		channel = word(h[i+len(hChannel):])
	}
	if i := strings.Index(h, hTo); i >= 0 {
		r := h[i+len(hTo):]
		if j := strings.IndexAny(r, " \t\r\n<"); j >= 0 {
			r = r[:j]
		}
		recipient = r
	}
	return channel, recipient
}

// word is s's leading run of letters, digits, '_' and '-'.
func word(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return s[:i]
		}
	}
	return s
}

// harmonyBody gives out a body up to its end; false: it needs more.
func (p *Parser) harmonyBody(final bool) bool {
	i, m := firstMarker(p.rbuf, harmonyEnds)
	if i < 0 {
		keep := 0
		if !final {
			keep = partialMarker(p.rbuf, harmonyEnds)
		}
		p.harmonyText(p.rbuf[:len(p.rbuf)-keep])
		p.rbuf = p.rbuf[len(p.rbuf)-keep:]
		return false
	}
	p.harmonyText(p.rbuf[:i])
	p.rbuf = p.rbuf[i:]
	if m == hEnd || m == hCall || m == hReturn {
		p.rbuf = p.rbuf[len(m):]
		if p.h.kind == hkReasoning && p.o.KeepReasoning {
			p.content(m)
		}
	}
	if p.h.kind == hkCall {
		p.endCall()
	}
	p.h.stage = hsHeader
	return true
}

// harmonyText is body text of the open message.
func (p *Parser) harmonyText(s string) {
	if s == "" {
		return
	}
	switch p.h.kind {
	case hkContent:
		p.content(s)
	case hkReasoning:
		if p.o.KeepReasoning {
			p.content(s)
		} else {
			p.out.Reasoning += s
		}
	case hkCall:
		p.args(s)
	}
}
