package toolcall

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/batchd/batchd/jsontext"
)

// errJSON: the text is not the JSON a call was expected to be.
var errJSON = errors.New("toolcall: malformed JSON")

// maxJSONDepth bounds nesting: the text is bounded by max_tokens anyway,
// this bounds the stack a hostile output can make the parser hold.
const maxJSONDepth = 256

// mode is what a scan does with one value.
type mode uint8

const (
	skip    mode = iota // read past it
	compact             // write it, compacted, to the sink (and all inside it)
	capture             // give it to done when complete: a string decoded, others compacted
	stream              // a string whose characters go to the sink as they are decoded
	descend             // a container whose members decide chooses for
)

// frame is an open container: its kind, its key just read, its mode, and
// whether it has had a member.
type frame struct {
	obj  bool
	key  string
	mode mode
	any  bool
}

type scanState uint8

const (
	stValue    scanState = iota // a value is next (whitespace first)
	stKeyOrEnd                  // after '{': a key or '}'
	stKey                       // after ',' in an object: a key
	stColon                     // after a key
	stAfter                     // after a value: ',' or the container's close
	stString                    // in a string
	stEscape                    // after '\'
	stUnicode                   // in \uXXXX
	stNumber                    // in a number
	stLiteral                   // in true, false or null
	stDone                      // the top value is complete
)

// jsonScan reads one JSON value incrementally. For each value inside a
// descend container (and the top one) it asks decide what to do. Compacted
// text is written as nlohmann's dump() writes it, since llama.cpp returns a
// call's arguments re-serialised that way.
type jsonScan struct {
	decide func(path []frame, first byte) mode
	sink   func(s string)               // compacted or streamed text
	done   func(path []frame, v string) // a captured value, or the end of a descend/stream one

	state  scanState
	path   []frame
	isKey  bool // the string being read is a key
	cur    mode // the mode of the scalar being read
	str    strings.Builder
	capBuf strings.Builder // a captured container's text
	tok    []byte          // a number's or literal's text
	hex    []byte          // \u digits
	high   rune            // a pending high surrogate
}

// parentMode is the mode of the container the next value is in.
func (s *jsonScan) parentMode() mode {
	if len(s.path) == 0 {
		return descend
	}
	return s.path[len(s.path)-1].mode
}

// modeFor is the mode of a value starting now with byte first.
func (s *jsonScan) modeFor(first byte) mode {
	switch m := s.parentMode(); m {
	case compact, capture, skip, stream:
		return m
	}
	if s.decide == nil {
		return skip
	}
	return s.decide(s.path, first)
}

// out writes compacted text of a value in mode m.
func (s *jsonScan) out(m mode, text string) {
	switch m {
	case compact:
		if s.sink != nil {
			s.sink(text)
		}
	case capture:
		s.capBuf.WriteString(text)
	}
}

// feed reads text; it returns how many bytes it took (fewer than
// len(text) when the value ended before) and whether the value is complete.
func (s *jsonScan) feed(text string) (int, bool, error) {
	for i := 0; i < len(text); i++ {
		if s.state == stDone {
			return i, true, nil
		}
		again, err := s.step(text[i])
		if err != nil {
			return i, false, err
		}
		if again { // a number or literal ended at this byte: read it again
			i--
		}
	}
	return len(text), s.state == stDone, nil
}

// finish ends the text: a top-level number completes here.
func (s *jsonScan) finish() bool {
	if s.state == stNumber && len(s.path) == 0 && s.endNumber() == nil {
		return true
	}
	return s.state == stDone
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *jsonScan) step(c byte) (again bool, err error) {
	switch s.state {
	case stValue:
		if isSpace(c) {
			return false, nil
		}
		return false, s.startValue(c)
	case stKeyOrEnd, stKey:
		switch {
		case isSpace(c):
			return false, nil
		case c == '}' && s.state == stKeyOrEnd:
			return false, s.closeContainer(c)
		case c == '"':
			s.isKey = true
			s.str.Reset()
			s.out(s.parentMode(), `"`)
			s.state = stString
			return false, nil
		}
		return false, errJSON
	case stColon:
		switch {
		case isSpace(c):
			return false, nil
		case c == ':':
			s.out(s.parentMode(), ":")
			s.state = stValue
			return false, nil
		}
		return false, errJSON
	case stAfter:
		return false, s.after(c)
	case stString:
		return false, s.stringByte(c)
	case stEscape:
		return false, s.escape(c)
	case stUnicode:
		return false, s.unicode(c)
	case stNumber:
		if strings.IndexByte("0123456789+-.eE", c) >= 0 {
			s.tok = append(s.tok, c)
			return false, nil
		}
		return true, s.endNumber()
	case stLiteral:
		if c >= 'a' && c <= 'z' {
			if s.tok = append(s.tok, c); len(s.tok) > 5 {
				return false, errJSON
			}
			return false, nil
		}
		return true, s.endLiteral()
	}
	return false, errJSON
}

func (s *jsonScan) startValue(c byte) error {
	if n := len(s.path); n > 0 && !s.path[n-1].obj && !s.path[n-1].any && c == ']' {
		return s.closeContainer(c) // an empty array
	}
	m := s.modeFor(c)
	if len(s.path) > 0 {
		s.path[len(s.path)-1].any = true
	}
	switch {
	case c == '{' || c == '[':
		if len(s.path) >= maxJSONDepth {
			return fmt.Errorf("%w: nested deeper than %d", errJSON, maxJSONDepth)
		}
		if m == capture && s.parentMode() != capture {
			s.capBuf.Reset()
		}
		if m == stream {
			m = skip // only strings stream
		}
		s.out(m, string(c))
		s.path = append(s.path, frame{obj: c == '{', mode: m})
		s.state = stValue
		if c == '{' {
			s.state = stKeyOrEnd
		}
		return nil
	case c == '"':
		s.isKey, s.cur = false, m
		s.str.Reset()
		if m != capture || s.parentMode() == capture {
			s.out(m, `"`)
		}
		s.state = stString
		return nil
	case c == '-' || c >= '0' && c <= '9':
		s.tok, s.cur, s.state = append(s.tok[:0], c), m, stNumber
		return nil
	case c == 't' || c == 'f' || c == 'n':
		s.tok, s.cur, s.state = append(s.tok[:0], c), m, stLiteral
		return nil
	}
	return errJSON
}

// after reads what follows a value: a comma, or the container's close.
func (s *jsonScan) after(c byte) error {
	if isSpace(c) {
		return nil
	}
	if len(s.path) == 0 {
		return errJSON
	}
	f := &s.path[len(s.path)-1]
	switch {
	case c == ',':
		s.out(f.mode, ",")
		s.state = stValue
		if f.obj {
			s.state = stKey
		}
		return nil
	case c == '}' && f.obj, c == ']' && !f.obj:
		return s.closeContainer(c)
	}
	return errJSON
}

func (s *jsonScan) closeContainer(c byte) error {
	f := s.path[len(s.path)-1]
	s.out(f.mode, string(c))
	s.path = s.path[:len(s.path)-1]
	v := ""
	if f.mode == capture {
		v = s.capBuf.String()
	}
	s.valueDone(f.mode, v)
	return nil
}

// valueDone moves past a complete value of mode m, telling done of it
// unless it lies inside a compacted or captured one.
func (s *jsonScan) valueDone(m mode, v string) {
	if s.done != nil && m != skip {
		if p := s.parentMode(); p != compact && p != capture {
			s.done(s.path, v)
		}
	}
	if len(s.path) == 0 {
		s.state = stDone
		return
	}
	s.state = stAfter
}

func (s *jsonScan) stringByte(c byte) error {
	switch {
	case c == '"':
		return s.endString()
	case c == '\\':
		s.state = stEscape
		return nil
	case c < 0x20:
		return errJSON
	}
	s.char(string([]byte{c}))
	return nil
}

// char is decoded text of the current string. Bytes of a multi-byte
// character pass one at a time; escaping leaves them as they are.
func (s *jsonScan) char(t string) {
	if s.high != 0 {
		s.high = 0
		s.char("\uFFFD")
	}
	if s.isKey {
		s.str.WriteString(t)
		s.out(s.parentMode(), escapeJSON(t))
		return
	}
	switch m := s.cur; {
	case m == stream:
		if s.sink != nil {
			s.sink(t)
		}
	case m == capture && s.parentMode() != capture:
		s.str.WriteString(t)
	default:
		s.out(m, escapeJSON(t))
	}
}

func (s *jsonScan) escape(c byte) error {
	s.state = stString
	switch c {
	case '"', '\\', '/':
		s.char(string(c))
	case 'b':
		s.char("\b")
	case 'f':
		s.char("\f")
	case 'n':
		s.char("\n")
	case 'r':
		s.char("\r")
	case 't':
		s.char("\t")
	case 'u':
		s.hex, s.state = s.hex[:0], stUnicode
	default:
		return errJSON
	}
	return nil
}

func (s *jsonScan) unicode(c byte) error {
	if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
		return errJSON
	}
	if s.hex = append(s.hex, c); len(s.hex) < 4 {
		return nil
	}
	s.state = stString
	n, _ := strconv.ParseUint(string(s.hex), 16, 32)
	switch r := rune(n); {
	case r >= 0xD800 && r < 0xDC00:
		if s.high != 0 {
			s.high = 0
			s.char("\uFFFD")
		}
		s.high = r
	case r >= 0xDC00 && r < 0xE000:
		if s.high == 0 {
			s.char("\uFFFD")
			return nil
		}
		h := s.high
		s.high = 0
		s.char(string(0x10000 + (h-0xD800)<<10 + (r - 0xDC00)))
	default:
		s.char(string(r))
	}
	return nil
}

func (s *jsonScan) endString() error {
	if s.high != 0 {
		s.high = 0
		s.char("\uFFFD")
	}
	if s.isKey {
		f := &s.path[len(s.path)-1]
		f.key = s.str.String()
		s.out(f.mode, `"`)
		s.state = stColon
		return nil
	}
	m := s.cur
	if m == capture && s.parentMode() != capture {
		s.valueDone(m, s.str.String())
		return nil
	}
	if m != stream {
		s.out(m, `"`)
	}
	s.valueDone(m, "")
	return nil
}

func (s *jsonScan) endNumber() error {
	text, ok := normalizeNumber(string(s.tok))
	if !ok {
		return errJSON
	}
	return s.scalarDone(text)
}

func (s *jsonScan) endLiteral() error {
	t := string(s.tok)
	if t != "true" && t != "false" && t != "null" {
		return errJSON
	}
	return s.scalarDone(t)
}

func (s *jsonScan) scalarDone(text string) error {
	m := s.cur
	if m == capture && s.parentMode() != capture {
		s.valueDone(m, text)
		return nil
	}
	s.out(m, text)
	s.valueDone(m, "")
	return nil
}

// normalizeNumber checks a JSON number and writes it as nlohmann's dump()
// does: integers that fit 64 bits as integers ("-0" is 0), others as the
// shortest double that reads back, in nlohmann's layout.
func normalizeNumber(t string) (string, bool) {
	if !validNumber(t) {
		return "", false
	}
	if !strings.ContainsAny(t, ".eE") {
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return strconv.FormatInt(n, 10), true
		}
		if n, err := strconv.ParseUint(t, 10, 64); err == nil {
			return strconv.FormatUint(n, 10), true
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return "", false
	}
	if math.IsInf(f, 0) {
		return "null", true // nlohmann writes what it cannot represent as null
	}
	return formatDouble(f), true
}

// validNumber is JSON's number grammar.
func validNumber(t string) bool {
	i := 0
	if i < len(t) && t[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(t) && t[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(t) && t[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(t)
}

// formatDouble writes f as nlohmann's dtoa does: the shortest digits that
// read back, plain between 1e-5 and 1e15 ("1.0" for a whole number),
// d.ddde+XX outside.
func formatDouble(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n := x + 1 // the decimal point sits after n digits
	k := len(digits)
	switch {
	case k <= n && n <= 15:
		return sign + digits + strings.Repeat("0", n-k) + ".0"
	case 0 < n && n <= 15:
		return sign + digits[:n] + "." + digits[n:]
	case -4 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	m := digits[:1]
	if k > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	ev := n - 1
	if ev < 0 {
		ev = -ev
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, ev)
}

// escapeJSON escapes decoded text as nlohmann's dump writes strings
// (jsontext's escaping), byte by byte: a character may come one byte at
// a time.
func escapeJSON(t string) string {
	if !strings.ContainsAny(t, "\"\\") && !hasControl(t) {
		return t
	}
	return string(jsontext.AppendEscaped(nil, t))
}

func hasControl(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] < 0x20 {
			return true
		}
	}
	return false
}
