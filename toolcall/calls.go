package toolcall

import "strings"

// The calls stage's states.
const (
	csContent   = iota // text, until a format's opening marker
	csCall             // in a call's (or the calls') JSON
	csAfterCall        // after a call: its closing marker, or more calls
	csR1               // in DeepSeek R1's calls
	csXML              // in Qwen3-Coder's calls
	csGemma            // in Gemma 4's calls
	csRest             // after the calls: what follows is content
)

// layout is where the calls sit in a JSON document.
type layout uint8

const (
	layObject  layout = iota // the document is one call
	layArray                 // an array of calls
	layGeneric               // {"tool_call": call}, {"tool_calls": [...]} or {"response": "..."}
	layArgs                  // the document is a call's arguments (DeepSeek R1)
)

type role uint8

const (
	roleOther role = iota
	roleContainer
	roleCall
	roleName
	roleArgs
	roleID
	roleContent
)

// callReader reads the calls of one JSON document.
type callReader struct {
	p    *Parser
	scan jsonScan
	lay  layout
	// waitID holds each call until it ends: its id comes after its
	// arguments (Mistral Nemo, Generic).
	waitID bool
	// strict: the document is a call only if its first key is "name" (or
	// "type" then "name"), as Llama 3.x's parser demands; else it is text.
	strict bool
	bad    bool

	name, id string
	named    bool
	started  bool
	args     strings.Builder // arguments read before the call was given out
	toArgs   bool            // what the scan streams is arguments (else content)
	raw      strings.Builder // the text since the marker, until a call is given out
	any      bool            // a call was given out
}

func newReader(p *Parser, lay layout, marker string) *callReader {
	r := &callReader{p: p, lay: lay, waitID: p.o.Format == MistralNemo || lay == layGeneric}
	r.raw.WriteString(marker)
	r.scan.decide, r.scan.sink, r.scan.done = r.decide, r.sink, r.done
	return r
}

func memberRole(k string) role {
	switch k {
	case "name":
		return roleName
	case "arguments", "parameters":
		return roleArgs
	case "id":
		return roleID
	}
	return roleOther
}

// role is what the value with ancestors path is.
func (r *callReader) role(path []frame) role {
	n := len(path)
	switch r.lay {
	case layObject:
		switch n {
		case 0:
			return roleCall
		case 1:
			return memberRole(path[0].key)
		}
	case layArray:
		switch n {
		case 0:
			return roleContainer
		case 1:
			return roleCall
		case 2:
			return memberRole(path[1].key)
		}
	case layArgs:
		if n == 0 {
			return roleArgs
		}
	case layGeneric:
		if n == 0 {
			return roleContainer
		}
		switch k := path[0].key; {
		case n == 1 && k == "tool_call":
			return roleCall
		case n == 1 && k == "tool_calls":
			return roleContainer
		case n == 1 && (k == "response" || k == "content"):
			return roleContent
		case n == 2 && k == "tool_call":
			return memberRole(path[1].key)
		case n == 2 && k == "tool_calls":
			return roleCall
		case n == 3 && k == "tool_calls":
			return memberRole(path[2].key)
		}
	}
	return roleOther
}

func (r *callReader) decide(path []frame, first byte) mode {
	if r.strict && !r.named && len(path) == 1 && path[0].key != "name" && path[0].key != "type" {
		r.bad = true
	}
	switch ro := r.role(path); ro {
	case roleContainer, roleCall:
		if first != '{' && first != '[' {
			return skip
		}
		return descend
	case roleName:
		if first != '"' {
			r.bad = true
		}
		return capture
	case roleID:
		return capture
	case roleArgs, roleContent:
		r.toArgs = ro == roleArgs
		if first == '"' { // arguments written as a JSON string: the string is the JSON text
			return stream
		}
		return compact
	}
	return skip
}

func (r *callReader) sink(s string) {
	switch {
	case !r.toArgs: // Generic's response: content given out, never again as raw text
		r.any = true
		r.raw.Reset()
		r.p.content(s)
	case r.started:
		r.p.args(s)
	default:
		r.args.WriteString(s)
	}
}

func (r *callReader) done(path []frame, v string) {
	switch r.role(path) {
	case roleName:
		if v == "" || len(v) > maxNameBytes*4 {
			r.bad = true
			return
		}
		r.name, r.named = v, true
		if !r.waitID {
			r.open()
		}
	case roleID:
		r.id = v
	case roleCall:
		r.close()
	case roleArgs:
		if r.lay == layArgs {
			r.named = true
			r.close()
		}
	}
}

// open gives the call out, with the arguments read so far.
func (r *callReader) open() {
	if r.started {
		return
	}
	r.p.startCall(r.id, r.name)
	r.started, r.any = true, true
	r.raw.Reset()
	r.p.args(r.args.String())
	r.args.Reset()
}

func (r *callReader) close() {
	if !r.named {
		r.bad = true
		return
	}
	r.open()
	r.p.endCall()
	r.name, r.id, r.named, r.started = "", "", false, false
}

// feed reads text into the document: the bytes taken, whether the
// document ended, and false for text that is not calls (malformed, or no
// call: the caller falls back to content).
func (r *callReader) feed(s string) (int, bool, bool) {
	n, done, err := r.scan.feed(s)
	if !r.any {
		r.raw.WriteString(s[:n])
	}
	return n, done, err == nil && !r.bad
}

// markers are the texts that open a format's calls.
func (p *Parser) markers() []string {
	switch p.o.Format {
	case Hermes:
		return []string{hermesOpen}
	case Llama3:
		return []string{pythonTag, "{"}
	case MistralNemo:
		return []string{nemoOpen}
	case Phi4:
		return []string{phiOpen, phiFunctools}
	case DeepSeekR1:
		return []string{r1CallsOpen}
	case Gemma4:
		return []string{gemmaOpen}
	case Qwen3Coder:
		ms := []string{hermesOpen}
		if p.o.Reasoning == nil { // Qwen3-Coder may leave out the first <tool_call>
			for _, t := range p.o.Tools {
				ms = append(ms, xmlFunction+t.Name+">")
			}
		}
		return ms
	}
	return nil
}

// plain is content before the first call, its trailing whitespace held
// where the format's parser drops it with the marker (llama.cpp's Hermes
// and DeepSeek R1 patterns begin with \s*).
func (p *Parser) plain(s string) {
	trims := p.o.Format == Hermes || p.o.Format == DeepSeekR1 || p.o.Format == Phi4 || p.o.Format == Qwen3Coder
	if !trims {
		p.content(s)
		return
	}
	s = p.ctrail + s
	body := strings.TrimRight(s, " \t\r\n")
	p.ctrail = s[len(body):]
	p.content(body)
}

// callText is the calls stage: text after any reasoning block.
func (p *Parser) callText(s string) {
	if !p.o.Calls {
		p.content(s)
		return
	}
	p.cbuf += s
	for p.cbuf != "" && p.callStep() {
	}
}

// callStep makes progress on p.cbuf; false: it needs more text.
func (p *Parser) callStep() bool {
	switch p.cstate {
	case csContent:
		return p.contentStep()
	case csCall:
		return p.readStep()
	case csAfterCall:
		return p.afterStep()
	case csR1:
		return p.r1Step()
	case csXML:
		return p.xmlStep()
	case csGemma:
		return p.gemmaStep()
	}
	if len(p.calls) > 0 {
		p.cbuf = strings.TrimLeft(p.cbuf, " \t\r\n")
	}
	p.content(p.cbuf)
	p.cbuf = ""
	return false
}

// partialMarker is the length of the longest end of s that may begin one
// of markers.
func partialMarker(s string, markers []string) int {
	keep := 0
	for _, m := range markers {
		keep = max(keep, partialSuffix(s, m))
	}
	return keep
}

func firstMarker(s string, markers []string) (int, string) {
	best, which := -1, ""
	for _, m := range markers {
		if i := strings.Index(s, m); i >= 0 && (best < 0 || i < best) {
			best, which = i, m
		}
	}
	return best, which
}

func (p *Parser) contentStep() bool {
	if p.o.Format == Generic { // the whole answer is one JSON document, or text
		lead := strings.TrimLeft(p.cbuf, " \t\r\n")
		switch {
		case lead == "":
			return false
		case lead[0] != '{':
			p.cstate = csRest
		default:
			p.reader, p.cstate = newReader(p, layGeneric, ""), csCall
		}
		return true
	}
	ms := p.markers()
	i, m := firstMarker(p.cbuf, ms)
	if i < 0 {
		keep := partialMarker(p.cbuf, ms)
		p.plain(p.cbuf[:len(p.cbuf)-keep])
		p.cbuf = p.cbuf[len(p.cbuf)-keep:]
		return false
	}
	p.plain(p.cbuf[:i])
	held := p.ctrail
	p.ctrail = ""
	if p.o.Format == Qwen3Coder {
		p.xml = xmlState{raw: held} // the space before the tag is text if no call comes
		if m == hermesOpen {
			p.cbuf, p.xml.raw = p.cbuf[i+len(m):], held+m
		} else { // a bare <function=NAME>: read from its tag
			p.cbuf = p.cbuf[i:]
		}
		p.cstate = csXML
		return true
	}
	switch m {
	case gemmaOpen:
		p.cbuf, p.gemma, p.cstate = p.cbuf[i+len(m):], gemmaState{raw: held + m}, csGemma
		return true
	case pythonTag: // a marker only: the call follows
		p.cbuf = p.cbuf[i+len(m):]
		return true
	case "{": // Llama 3.x: a JSON object that is a call, or text
		p.cbuf = p.cbuf[i:]
		p.reader = newReader(p, layObject, "")
		p.reader.strict = true
	case r1CallsOpen:
		p.cbuf = p.cbuf[i+len(m):]
		p.r1 = r1State{raw: m}
		p.cstate = csR1
		return true
	default:
		end := i + len(m)
		if m == phiFunctools {
			end-- // its "[" opens the array
		}
		p.cbuf = p.cbuf[end:]
		p.reader = nil // the layout follows from the first byte
		p.marker = m[:end-i]
	}
	p.cstate = csCall
	return true
}

// readStep feeds a call document.
func (p *Parser) readStep() bool {
	if p.reader == nil {
		lead := strings.TrimLeft(p.cbuf, " \t\r\n")
		if lead == "" {
			p.marker += p.cbuf
			p.cbuf = ""
			return false
		}
		lay := layObject
		if lead[0] == '[' {
			lay = layArray
		}
		p.reader = newReader(p, lay, p.marker)
	}
	r := p.reader
	n, done, ok := r.feed(p.cbuf)
	if !ok {
		p.fallback(n)
		return true
	}
	p.cbuf = p.cbuf[n:]
	if !done {
		return false
	}
	p.reader = nil
	p.cstate = csRest
	if p.o.Format == Hermes || p.o.Format == Phi4 {
		p.cstate = csAfterCall
	}
	if p.o.Format == Llama3 {
		p.cstate = csContent
	}
	return true
}

// fallback ends a document that is not calls after n more bytes: a call
// given out is closed; text read since the marker, if no call came of
// it, is content (llama.cpp returns an unparsable answer as content).
func (p *Parser) fallback(n int) {
	r := p.reader
	if r.started {
		p.endCall()
	}
	if !r.any {
		p.content(r.raw.String())
	}
	p.cbuf = p.cbuf[n:]
	p.reader = nil
	p.cstate = csRest
	if p.o.Format == Llama3 { // text may hold more objects that are calls
		p.cstate = csContent
	}
}

// afterStep reads what follows a Hermes or Phi-4 call: its closing marker,
// then another call or the rest.
func (p *Parser) afterStep() bool {
	close, open := hermesClose, hermesOpen
	if p.o.Format == Phi4 {
		close, open = phiClose, phiOpen
	}
	lead := strings.TrimLeft(p.cbuf, " \t\r\n")
	for _, m := range []string{close, open} {
		switch {
		case strings.HasPrefix(lead, m):
			p.cbuf = lead[len(m):]
			if m == open {
				p.reader, p.marker, p.cstate = nil, m, csCall
			}
			return true
		case strings.HasPrefix(m, lead):
			return false
		}
	}
	p.cbuf, p.cstate = lead, csRest
	return true
}

// callsDone ends the calls stage at the end of the text.
func (p *Parser) callsDone() {
	if !p.o.Calls {
		return
	}
	switch p.cstate {
	case csCall:
		r := p.reader
		switch {
		case r == nil:
			p.content(p.marker + p.cbuf)
		case r.scan.finish() && !r.bad:
		case r.started:
			p.endCall()
		case !r.any:
			p.content(r.raw.String())
		}
	case csR1:
		p.r1Done()
	case csXML:
		p.xmlDone()
	case csGemma:
		p.gemmaDone()
	case csContent:
		p.content(p.ctrail + p.cbuf)
	case csRest:
		p.callStep()
	}
	p.cbuf, p.ctrail, p.reader = "", "", nil
}
