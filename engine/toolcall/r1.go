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
	st := &p.r1
	take := func(n int) {
		if len(p.calls) == 0 || st.stage != r1Args {
			st.raw += p.cbuf[:n]
		}
		p.cbuf = p.cbuf[n:]
	}
	switch st.stage {
	case r1Between, r1After:
		ws := len(p.cbuf) - len(strings.TrimLeft(p.cbuf, " \t\r\n"))
		take(ws)
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
				take(len(m))
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
	case r1Header:
		i := strings.Index(p.cbuf, r1Sep)
		if i < 0 {
			if len(p.cbuf) > 64 {
				p.r1Malformed()
				return true
			}
			return false
		}
		take(i + len(r1Sep))
		st.stage = r1Name
		return true
	case r1Name:
		i := strings.IndexByte(p.cbuf, '\n')
		if i < 0 {
			st.name.WriteString(p.cbuf)
			take(len(p.cbuf))
			if st.name.Len() > maxNameBytes*4 {
				p.r1Malformed()
				return true
			}
			return false
		}
		st.name.WriteString(p.cbuf[:i])
		take(i + 1)
		st.stage = r1Fence
		return true
	case r1Fence:
		lead := strings.TrimLeft(p.cbuf, " \t\r\n")
		if lead == "" || strings.HasPrefix("```json", lead) && len(lead) < len("```json") {
			return false
		}
		take(len(p.cbuf) - len(lead))
		if strings.HasPrefix(p.cbuf, "```json") {
			take(len("```json"))
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
	case r1Args:
		n, done, ok := p.reader.feed(p.cbuf)
		take(n)
		if !ok {
			p.endCall()
			p.reader = nil
			p.cstate = csRest
			return true
		}
		if done {
			p.reader = nil
			st.stage = r1After
		}
		return done
	}
	return false
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
