package toolcall

import (
	"slices"
	"strings"

	"github.com/batchd/batchd/jsontext"
)

// Gemma 4's calls, as its template writes them and llama.cpp v0.5.0's
// handler reads them (common/parsers/gemma4.cpp):
//
//	<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3,opts:{a:[true,null]}}<tool_call|>
//
// Keys are bare (any text but ':' and '}'), strings sit between <|"|>
// marks and hold any text, the rest is JSON's numbers, true, false and
// null. The call is given out at its name and its arguments stream as
// JSON, a string as it is written.
const (
	gemmaOpen    = "<|tool_call>"
	gemmaClose   = "<tool_call|>"
	gemmaCall    = "call:"
	gemmaQuote   = `<|"|>`
	gemmaThought = "<|channel>thought"
	gemmaChannel = "<channel|>"
)

// Gemma4Thought are Gemma 4's reasoning tags.
var Gemma4Thought = Tags{gemmaThought, gemmaChannel}

// maxGemmaKey bounds a key (and a name, and a literal): longer is no call.
const maxGemmaKey = 256

// gemmaState is where Gemma 4's calls stand.
type gemmaState struct {
	stage int
	raw   string // the text since the marker, until a call is given out
	// stack holds the open containers, '{' or '['; want is what comes
	// next: a key (or '}'), a value (or ']' right after '['), or ',' and
	// the close.
	stack []byte
	want  int
	fresh bool // the container just opened (it may close at once)
	inStr bool
	// comma: a ',' was read, written with what follows it (so a call cut
	// short after it closes as valid JSON); key: a key is out, its value
	// not yet.
	comma, key bool
}

const (
	gemmaName  = iota // after <|tool_call>: call:NAME{
	gemmaArgs         // in the arguments
	gemmaEnd          // <tool_call|> after the arguments
	gemmaAfter        // another call, or the rest
)

const (
	wantKey = iota
	wantValue
	wantNext
)

// gemmaStep makes progress in Gemma 4's calls; false: it needs more text.
func (p *Parser) gemmaStep() bool {
	g := &p.gemma
	switch g.stage {
	case gemmaName:
		return p.gemmaName()
	case gemmaArgs:
		return p.gemmaArgs()
	case gemmaEnd, gemmaAfter:
		lead := strings.TrimLeft(p.cbuf, " \t\r\n")
		for _, m := range []string{gemmaClose, gemmaOpen} {
			switch {
			case strings.HasPrefix(lead, m):
				if g.stage == gemmaEnd {
					p.endCall()
				}
				p.cbuf = lead[len(m):]
				if m == gemmaOpen {
					*g = gemmaState{raw: m}
				} else {
					g.stage = gemmaAfter
				}
				return true
			case strings.HasPrefix(m, lead):
				return false
			}
		}
		if g.stage == gemmaEnd {
			p.endCall() // a model that left out <tool_call|>
		}
		p.cbuf, p.cstate = lead, csRest
		return true
	}
	return false
}

// gemmaName reads call:NAME{ and gives the call out.
func (p *Parser) gemmaName() bool {
	g := &p.gemma
	if !strings.HasPrefix(p.cbuf, gemmaCall) {
		if strings.HasPrefix(gemmaCall, p.cbuf) {
			return false
		}
		p.gemmaMalformed()
		return true
	}
	rest := p.cbuf[len(gemmaCall):]
	i := strings.IndexByte(rest, '{')
	if i < 0 {
		if len(rest) > maxGemmaKey {
			p.gemmaMalformed()
			return true
		}
		return false
	}
	name := rest[:i]
	if i == 0 || i > maxGemmaKey || len(p.o.Tools) > 0 && !slices.ContainsFunc(p.o.Tools, func(t Tool) bool { return t.Name == name }) {
		p.gemmaMalformed()
		return true
	}
	p.cbuf = rest[i+1:]
	p.startCall("", name)
	p.args("{")
	g.stage, g.stack, g.want, g.fresh = gemmaArgs, []byte{'{'}, wantKey, true
	return true
}

// gemmaArgs turns the arguments into JSON as far as the text goes.
func (p *Parser) gemmaArgs() bool {
	g := &p.gemma
	if g.inStr {
		return p.gemmaString()
	}
	lead := strings.TrimLeft(p.cbuf, " \t\r\n")
	if lead == "" {
		p.cbuf = ""
		return false
	}
	p.cbuf = lead
	c := lead[0]
	top := g.stack[len(g.stack)-1]
	switch {
	case g.fresh && (top == '{' && c == '}' || top == '[' && c == ']'), g.want == wantNext && c == closer(top):
		p.args(string(c))
		p.cbuf = lead[1:]
		g.stack = g.stack[:len(g.stack)-1]
		g.want, g.fresh = wantNext, false
		if len(g.stack) == 0 {
			g.stage = gemmaEnd
		}
		return true
	case g.want == wantNext && c == ',':
		g.comma = true
		p.cbuf = lead[1:]
		g.want = wantValue
		if top == '{' {
			g.want = wantKey
		}
		return true
	case g.want == wantKey:
		i := strings.IndexAny(lead, ":}")
		switch {
		case i < 0 && len(lead) <= maxGemmaKey:
			return false
		case i <= 0 || i > maxGemmaKey || lead[i] == '}':
			p.gemmaMalformed()
			return true
		}
		p.gemmaArg(jsontext.Quote(lead[:i]) + ":")
		p.cbuf = lead[i+1:]
		g.want, g.fresh, g.key = wantValue, false, true
		return true
	case g.want == wantValue:
		return p.gemmaValue(lead)
	}
	p.gemmaMalformed()
	return true
}

// gemmaArg writes JSON text of the arguments, after a pending comma.
func (p *Parser) gemmaArg(s string) {
	if p.gemma.comma {
		s = "," + s
	}
	p.gemma.comma = false
	p.args(s)
}

func closer(open byte) byte {
	if open == '[' {
		return ']'
	}
	return '}'
}

// gemmaValue begins a value: a string, a container, or a literal.
func (p *Parser) gemmaValue(lead string) bool {
	g := &p.gemma
	g.fresh = false
	switch c := lead[0]; {
	case c == '<':
		if !strings.HasPrefix(lead, gemmaQuote) {
			if strings.HasPrefix(gemmaQuote, lead) {
				return false
			}
			p.gemmaMalformed()
			return true
		}
		p.gemmaArg(`"`)
		p.cbuf, g.inStr, g.key = lead[len(gemmaQuote):], true, false
		return true
	case c == '{' || c == '[':
		p.gemmaArg(string(c))
		g.key = false
		p.cbuf = lead[1:]
		g.stack = append(g.stack, c)
		g.want, g.fresh = wantValue, true
		if c == '{' {
			g.want = wantKey
		}
		return true
	}
	i := strings.IndexAny(lead, ",}] \t\r\n<")
	if i < 0 {
		if len(lead) > maxGemmaKey {
			p.gemmaMalformed()
			return true
		}
		return false
	}
	v, err := jsontext.Parse([]byte(lead[:i]))
	if err != nil || typeOf(v)&(tNull|tBool|tInteger|tNumber) == 0 {
		p.gemmaMalformed()
		return true
	}
	p.gemmaArg(lead[:i])
	p.cbuf = lead[i:]
	g.want, g.key = wantNext, false
	return true
}

// gemmaString streams a string's text to its closing mark.
func (p *Parser) gemmaString() bool {
	g := &p.gemma
	if i := strings.Index(p.cbuf, gemmaQuote); i >= 0 {
		p.args(jsonInner(p.cbuf[:i]) + `"`)
		p.cbuf, g.inStr, g.want = p.cbuf[i+len(gemmaQuote):], false, wantNext
		return true
	}
	n := completeRunes(p.cbuf[:len(p.cbuf)-partialSuffix(p.cbuf, gemmaQuote)])
	p.args(jsonInner(p.cbuf[:n]))
	p.cbuf = p.cbuf[n:]
	return false
}

// jsonInner is s escaped as JSON string text, without the quotes.
func jsonInner(s string) string {
	q := jsontext.Quote(s)
	return q[1 : len(q)-1]
}

// gemmaMalformed ends what is no call: before the name is out, the text
// since the marker is content; after it, the call is closed as it stands
// (its JSON completed) and what follows is content.
func (p *Parser) gemmaMalformed() {
	g := &p.gemma
	if g.stage == gemmaName {
		p.content(g.raw)
		p.cstate = csRest
		return
	}
	p.gemmaCloseCall()
	p.cstate = csRest
}

// gemmaCloseCall ends a call cut short: its string and containers closed,
// a key left without its value given null.
func (p *Parser) gemmaCloseCall() {
	g := &p.gemma
	if g.stage == gemmaArgs {
		if g.inStr {
			p.args(`"`)
		} else if g.key {
			p.args("null")
		}
		for i := len(g.stack) - 1; i >= 0; i-- {
			p.args(string(closer(g.stack[i])))
		}
	}
	if g.stage != gemmaAfter {
		p.endCall()
	}
	*g = gemmaState{stage: gemmaAfter}
}

// gemmaDone ends the text inside the calls.
func (p *Parser) gemmaDone() {
	if p.gemma.stage == gemmaName {
		p.content(p.gemma.raw + p.cbuf)
		p.cbuf = ""
		return
	}
	if p.gemma.stage == gemmaArgs && p.gemma.inStr {
		p.args(jsonInner(p.cbuf))
		p.cbuf = ""
	}
	p.gemmaCloseCall()
	if p.cbuf = strings.TrimLeft(p.cbuf, " \t\r\n"); p.cbuf != "" {
		p.content(p.cbuf)
		p.cbuf = ""
	}
}
