package toolcall

import "strings"

// r1State is where DeepSeek R1's calls stand:
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//	```json
//	{...}
//	```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
type r1State struct {
	stage int
	raw   string // the text since the marker, until a call is given out
	name  strings.Builder
}

const (
	r1Between = iota // before a call or the end marker
	r1Header         // "function" before the separator
	r1Name           // the name, to the line's end
	r1Fence          // ```json before the arguments
	r1Args           // the arguments
	r1After          // ``` and the call's end marker
)

// r1Step makes progress in DeepSeek R1's calls; false: it needs more text.
func (p *Parser) r1Step() bool {
	switch p.r1.stage {
	case r1Between, r1After:
		return p.r1Marker()
	case r1Header:
		return p.r1Header()
	case r1Name:
		return p.r1Name()
	case r1Fence:
		return p.r1Fence()
	case r1Args:
		return p.r1Args()
	}
	return false
}

// r1Take consumes n bytes, kept as raw text until a call is out.
func (p *Parser) r1Take(n int) {
	if len(p.calls) == 0 || p.r1.stage != r1Args {
		p.r1.raw += p.cbuf[:n]
	}
	p.cbuf = p.cbuf[n:]
}

// r1Marker reads the marker that opens a call, closes one or ends them all.
func (p *Parser) r1Marker() bool {
	st := &p.r1
	p.r1Take(len(p.cbuf) - len(strings.TrimLeft(p.cbuf, " \t\r\n")))
	if p.cbuf == "" {
		return false
	}
	expect := []string{r1CallOpen, r1CallsClose}
	if st.stage == r1After {
		expect = []string{"```", r1CallClose, r1CallOpen, r1CallsClose}
	}
	for _, m := range expect {
		switch {
		case strings.HasPrefix(p.cbuf, m):
			p.r1Take(len(m))
			switch m {
			case r1CallOpen:
				st.stage = r1Header
				st.name.Reset()
			case r1CallsClose:
				p.cstate = csRest
			}
			return true
		case strings.HasPrefix(m, p.cbuf):
			return false
		}
	}
	p.r1Malformed()
	return true
}

// r1Header reads "function" up to the separator before the name.
func (p *Parser) r1Header() bool {
	i := strings.Index(p.cbuf, r1Sep)
	if i < 0 {
		if len(p.cbuf) > 64 {
			p.r1Malformed()
			return true
		}
		return false
	}
	p.r1Take(i + len(r1Sep))
	p.r1.stage = r1Name
	return true
}

// r1Name reads the function's name to the end of its line.
func (p *Parser) r1Name() bool {
	st := &p.r1
	i := strings.IndexByte(p.cbuf, '\n')
	if i < 0 {
		st.name.WriteString(p.cbuf)
		p.r1Take(len(p.cbuf))
		if st.name.Len() > maxNameBytes*4 {
			p.r1Malformed()
			return true
		}
		return false
	}
	st.name.WriteString(p.cbuf[:i])
	p.r1Take(i + 1)
	st.stage = r1Fence
	return true
}

// r1Fence reads the ```json fence and opens the call's arguments.
func (p *Parser) r1Fence() bool {
	st := &p.r1
	lead := strings.TrimLeft(p.cbuf, " \t\r\n")
	if lead == "" || strings.HasPrefix("```json", lead) && len(lead) < len("```json") {
		return false
	}
	p.r1Take(len(p.cbuf) - len(lead))
	if strings.HasPrefix(p.cbuf, "```json") {
		p.r1Take(len("```json"))
	}
	name := strings.TrimSpace(st.name.String())
	if name == "" {
		p.r1Malformed()
		return true
	}
	st.stage = r1Args
	p.reader = newReader(p, layArgs, "")
	p.reader.name, p.reader.named = name, true
	p.reader.open()
	return true
}

// r1Args streams the call's arguments until their JSON value ends.
func (p *Parser) r1Args() bool {
	n, done, ok := p.reader.feed(p.cbuf)
	p.r1Take(n)
	if !ok {
		p.endCall()
		p.reader = nil
		p.cstate = csRest
		return true
	}
	if done {
		p.reader = nil
		p.r1.stage = r1After
	}
	return done
}

// r1Malformed gives up on the calls: text since the marker is content if
// no call was given out, and what follows is content.
func (p *Parser) r1Malformed() {
	if len(p.calls) == 0 {
		p.content(p.r1.raw)
	}
	p.cstate = csRest
}

func (p *Parser) r1Done() {
	switch {
	case p.r1.stage == r1Args && p.reader != nil:
		p.reader.scan.finish()
		p.endCall()
	case len(p.calls) == 0:
		p.content(p.r1.raw + p.cbuf)
	}
}
