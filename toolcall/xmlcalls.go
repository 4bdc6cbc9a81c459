package toolcall

import (
	"strings"
	"unicode/utf8"

	"github.com/batchd/batchd/jsontext"
)

// Qwen3-Coder's XML calls (Qwen3-Coder, Qwen3.5, Qwen3.6):
//
//	<tool_call>
//	<function=NAME>
//	<parameter=ARG>
//	VALUE
//	</parameter>
//	</function>
//	</tool_call>
//
// The call is given out at its name; a string argument streams as it is
// written, any other when its closing tag comes (its JSON type is known
// only then).
const (
	xmlFunction   = "<function="
	xmlFuncClose  = "</function>"
	xmlParameter  = "<parameter="
	xmlParamClose = "</parameter>"
)

// xmlState is where Qwen3-Coder's calls stand.
type xmlState struct {
	stage  int
	raw    string // the text since the marker, until a call is given out
	params []xmlParam
	param  xmlParam // the argument being read
	nargs  int
	quoted bool // a string argument's opening quote is out
	value  strings.Builder
}

const (
	xmlOpen      = iota // after <tool_call>: <function=
	xmlName             // the function's name, to ">"
	xmlArgs             // <parameter= or </function>
	xmlParamName        // the parameter's name, to ">"
	xmlValueLead        // the newline after the parameter's tag
	xmlValue            // the value, to </parameter>
	xmlClose            // </tool_call> after </function>
	xmlAfter            // another call, or the rest
)

// xmlStep makes progress in Qwen3-Coder's calls; false: it needs more text.
func (p *Parser) xmlStep() bool {
	switch p.xml.stage {
	case xmlOpen, xmlArgs, xmlClose, xmlAfter:
		return p.xmlMarker()
	case xmlName, xmlParamName:
		return p.xmlTagName()
	case xmlValueLead:
		if strings.HasPrefix(p.cbuf, "\n") {
			p.xmlTake(1)
		}
		p.xml.stage = xmlValue
		return true
	case xmlValue:
		return p.xmlValueStep()
	}
	return false
}

// xmlTake consumes n bytes, kept as raw text until a call is out.
func (p *Parser) xmlTake(n int) {
	if p.xml.stage <= xmlName {
		p.xml.raw += p.cbuf[:n]
	}
	p.cbuf = p.cbuf[n:]
}

// xmlExpect are the tags each stage may read next.
var xmlExpect = [...][]string{
	xmlOpen:  {xmlFunction},
	xmlArgs:  {xmlParameter, xmlFuncClose},
	xmlClose: {hermesClose, hermesOpen, xmlFunction},
	xmlAfter: {hermesOpen, xmlFunction},
}

// xmlMarker reads the tag that moves a call on.
func (p *Parser) xmlMarker() bool {
	st := &p.xml
	p.xmlTake(len(p.cbuf) - len(strings.TrimLeft(p.cbuf, " \t\r\n")))
	if p.cbuf == "" {
		return false
	}
	for _, m := range xmlExpect[st.stage] {
		if m == xmlFunction && st.stage >= xmlClose && p.o.Reasoning != nil {
			continue // a bare <function= opens a call only for Qwen3-Coder
		}
		switch {
		case strings.HasPrefix(p.cbuf, m):
			if st.stage == xmlClose && m != hermesClose {
				p.endCall() // a model that left out </tool_call>
				st.stage = xmlAfter
				return true
			}
			p.xmlTake(len(m))
			switch m {
			case xmlFunction:
				if st.stage == xmlAfter {
					st.raw = m
				}
				st.stage = xmlName
			case xmlParameter:
				st.stage = xmlParamName
			case xmlFuncClose:
				p.args("}")
				st.stage = xmlClose
			case hermesClose:
				p.endCall()
				st.stage = xmlAfter
			case hermesOpen:
				st.raw, st.stage = m, xmlOpen
			}
			return true
		case strings.HasPrefix(m, p.cbuf):
			return false
		}
	}
	switch st.stage {
	case xmlClose:
		p.endCall()
		p.cstate = csRest
	case xmlAfter:
		p.cstate = csRest
	default:
		p.xmlMalformed()
	}
	return true
}

// xmlTagName reads a function's or parameter's name up to ">".
func (p *Parser) xmlTagName() bool {
	st := &p.xml
	i := strings.IndexByte(p.cbuf, '>')
	if i < 0 {
		if len(p.cbuf) > maxNameBytes*4 {
			p.xmlMalformed()
			return true
		}
		return false
	}
	name := strings.TrimSpace(p.cbuf[:i])
	if name == "" || i > maxNameBytes*4 {
		p.xmlMalformed()
		return true
	}
	if st.stage == xmlName {
		p.xmlTake(i + 1)
		st.params, st.nargs = p.toolParams(name), 0
		p.startCall("", name)
		p.args("{")
		st.raw, st.stage = "", xmlArgs
		return true
	}
	p.xmlTake(i + 1)
	st.param = xmlParam{Name: name, Types: tAll}
	for _, x := range st.params {
		if x.Name == name {
			st.param = x
		}
	}
	sep := ""
	if st.nargs > 0 {
		sep = ","
	}
	p.args(sep + jsontext.Quote(name) + ":")
	st.nargs++
	st.quoted = false
	st.value.Reset()
	st.stage = xmlValueLead
	return true
}

// xmlValueStep reads an argument's value up to </parameter>, less the newline
// before it; a string streams as it comes.
func (p *Parser) xmlValueStep() bool {
	st := &p.xml
	i := strings.Index(p.cbuf, xmlParamClose)
	if i < 0 {
		n := len(p.cbuf) - partialSuffix(p.cbuf, xmlParamClose)
		if n > 0 && p.cbuf[n-1] == '\n' {
			n-- // it may be the newline before the tag
		}
		n = completeRunes(p.cbuf[:n])
		p.xmlText(p.cbuf[:n])
		p.cbuf = p.cbuf[n:]
		return false
	}
	p.xmlText(strings.TrimSuffix(p.cbuf[:i], "\n"))
	p.cbuf = p.cbuf[i+len(xmlParamClose):]
	p.xmlValueEnd()
	st.stage = xmlArgs
	return true
}

// xmlText is more of the value: streamed for a string parameter.
func (p *Parser) xmlText(s string) {
	st := &p.xml
	if st.param.Types != tString {
		st.value.WriteString(s)
		return
	}
	if !st.quoted {
		p.args(`"`)
		st.quoted = true
	}
	if s != "" {
		p.args(string(jsontext.AppendEscaped(nil, s)))
	}
}

// xmlValueEnd closes the value being read.
func (p *Parser) xmlValueEnd() {
	st := &p.xml
	if st.param.Types == tString {
		if !st.quoted {
			p.args(`"`)
		}
		p.args(`"`)
		return
	}
	p.args(argJSON(st.value.String(), st.param.Types))
	st.value.Reset()
}

// xmlMalformed gives up on the calls: text since the marker is content if
// no call came of it; a call given out is closed as valid JSON.
func (p *Parser) xmlMalformed() {
	st := &p.xml
	if st.stage <= xmlName {
		p.content(st.raw)
	} else {
		p.xmlCloseCall()
	}
	p.cstate = csRest
}

// xmlCloseCall ends a call cut short: its value and arguments closed.
func (p *Parser) xmlCloseCall() {
	st := &p.xml
	switch st.stage {
	case xmlValueLead, xmlValue:
		p.xmlText(p.cbuf)
		p.cbuf = ""
		p.xmlValueEnd()
		fallthrough
	case xmlArgs, xmlParamName:
		p.args("}")
		fallthrough
	case xmlClose:
		p.endCall()
	}
}

// xmlDone ends the text inside the calls.
func (p *Parser) xmlDone() {
	st := &p.xml
	switch {
	case st.stage <= xmlName:
		p.content(st.raw + p.cbuf)
		p.cbuf = ""
	case st.stage == xmlAfter:
		p.cstate = csRest
		p.callStep()
	default:
		p.xmlCloseCall()
	}
}

// toolParams are the named tool's parameters (nil for a name not given:
// each argument is then typed by its text).
func (p *Parser) toolParams(name string) []xmlParam {
	for _, t := range p.o.Tools {
		if t.Name == name {
			return xmlParams(t.Parameters)
		}
	}
	return nil
}

// completeRunes is the length of s less a UTF-8 character cut at its end.
func completeRunes(s string) int {
	for k := 1; k < utf8.UTFMax && k <= len(s); k++ {
		if utf8.RuneStart(s[len(s)-k]) {
			if !utf8.FullRuneInString(s[len(s)-k:]) {
				return len(s) - k
			}
			break
		}
	}
	return len(s)
}
