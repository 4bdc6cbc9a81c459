package grammar

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds on what one grammar may hold; past them Parse fails with
// ErrTooComplex instead of spending the daemon's memory.
const (
	MaxSourceBytes = 1 << 20 // GBNF text
	maxSymbols     = 1 << 20 // symbols after repetitions are expanded
	maxRules       = 1 << 16
	maxNesting     = 128 // parentheses inside parentheses
)

// ErrTooComplex: a grammar (or a state of one) past a bound.
var ErrTooComplex = errors.New("grammar too complex")

// SyntaxError is GBNF that does not parse, at a line and column (1-based,
// columns in bytes).
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// A grammar is rules of alternatives of symbols; a symbol is a reference
// to a rule or a character class (literals are one class per character).
type symKind uint8

const (
	symEnd symKind = iota // ends an alternative
	symRef
	symClass
)

type sym struct {
	kind symKind
	arg  int32 // the rule of a symRef, the class of a symClass
}

type rng struct{ lo, hi rune }

// class is a character class: ranges, or (neg) anything but them; "." is
// a negated empty class.
type class struct {
	ranges []rng
	neg    bool
}

func (c *class) match(r rune) bool {
	for _, x := range c.ranges {
		if x.lo <= r && r <= x.hi {
			return !c.neg
		}
	}
	return c.neg
}

// matchPartial reports whether a character that starts with the bytes of
// p may still match, as llama.cpp's llama_grammar_match_partial_char
// decides it (a negated class is refused when any of its ranges overlaps
// what p may become).
func (c *class) matchPartial(p partial) bool {
	if p.remain <= 0 || p.remain == 1 && p.value < 2 {
		return false
	}
	lo := p.value << (6 * p.remain)
	hi := lo | (1<<(6*p.remain) - 1)
	if lo == 0 {
		switch p.remain {
		case 2:
			lo = 1 << 11
		case 3:
			lo = 1 << 16
		}
	}
	if c.neg && len(c.ranges) == 0 {
		return true
	}
	for _, x := range c.ranges {
		if x.lo <= hi && lo <= x.hi {
			return !c.neg
		}
	}
	return c.neg
}

// parser builds rules from GBNF text, as llama.cpp's llama_grammar_parser:
// groups and repetitions become rules of their own.
type parser struct {
	src     string
	pos     int
	names   map[string]int32
	rules   [][][]sym // rule -> alternatives -> symbols
	ruleOf  []string  // names, for errors
	defined []bool
	used    []int // a position where each rule is referred to (for errors)
	classes []class
	classID map[string]int32
	nsyms   int
	depth   int
}

// Parse compiles GBNF text; its start rule is "root".
func Parse(src string) (*Grammar, error) {
	if len(src) > MaxSourceBytes {
		return nil, fmt.Errorf("%w: %d bytes of GBNF, at most %d", ErrTooComplex, len(src), MaxSourceBytes)
	}
	if !utf8.ValidString(src) {
		return nil, &SyntaxError{Line: 1, Col: 1, Msg: "the grammar is not valid UTF-8"}
	}
	p := &parser{src: src, names: map[string]int32{}, classID: map[string]int32{}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	root, ok := p.names["root"]
	if !ok || !p.defined[root] {
		return nil, &SyntaxError{Line: 1, Col: 1, Msg: "the grammar has no root rule"}
	}
	for id, d := range p.defined {
		if !d {
			return nil, p.errAt(p.used[id], "undefined rule %q", p.ruleOf[id])
		}
	}
	return build(p.rules, p.ruleOf, p.classes, root)
}

func (p *parser) errAt(pos int, format string, args ...any) error {
	line := 1 + strings.Count(p.src[:pos], "\n")
	col := pos - strings.LastIndexByte(p.src[:pos], '\n')
	return &SyntaxError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) parse() error {
	p.space(true)
	for p.pos < len(p.src) {
		if err := p.rule(); err != nil {
			return err
		}
	}
	return nil
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// space skips blanks and comments, and newlines where newlineOK.
func (p *parser) space(newlineOK bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		case newlineOK && (c == '\n' || c == '\r'):
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) name() (string, error) {
	start := p.pos
	for p.pos < len(p.src) && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return "", p.errAt(start, "expecting a name")
	}
	return p.src[start:p.pos], nil
}

func (p *parser) ruleID(name string, at int) int32 {
	if id, ok := p.names[name]; ok {
		return id
	}
	id := int32(len(p.rules))
	p.names[name] = id
	p.rules = append(p.rules, nil)
	p.ruleOf = append(p.ruleOf, name)
	p.defined = append(p.defined, false)
	p.used = append(p.used, at)
	return id
}

// newRule makes a rule for a group or a repetition, named after base.
func (p *parser) newRule(base string) (int32, error) {
	if len(p.rules) >= maxRules {
		return 0, fmt.Errorf("%w: more than %d rules", ErrTooComplex, maxRules)
	}
	name := base + "_" + strconv.Itoa(len(p.rules))
	id := p.ruleID(name, p.pos)
	p.defined[id] = true
	return id, nil
}

func (p *parser) rule() error {
	at := p.pos
	name, err := p.name()
	if err != nil {
		return err
	}
	p.space(false)
	if !strings.HasPrefix(p.src[p.pos:], "::=") {
		return p.errAt(p.pos, "expecting ::=")
	}
	p.pos += 3
	p.space(true)
	id := p.ruleID(name, at)
	if p.defined[id] {
		return p.errAt(at, "rule %q defined twice", name)
	}
	p.defined[id] = true
	alts, err := p.alternates(name, false)
	if err != nil {
		return err
	}
	p.rules[id] = alts
	switch {
	case p.pos >= len(p.src):
	case p.src[p.pos] == '\r' || p.src[p.pos] == '\n':
		p.pos++
	default:
		return p.errAt(p.pos, "expecting a newline or the end")
	}
	p.space(true)
	return nil
}

func (p *parser) alternates(name string, nested bool) ([][]sym, error) {
	var alts [][]sym
	for {
		seq, err := p.sequence(name, nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.pos >= len(p.src) || p.src[p.pos] != '|' {
			return alts, nil
		}
		p.pos++
		p.space(true)
	}
}

// sequence parses one alternative: literals, classes, references, groups,
// each optionally repeated.
func (p *parser) sequence(name string, nested bool) ([]sym, error) {
	var out []sym
	last := -1 // where the last item starts in out
	for p.pos < len(p.src) {
		start := len(out)
		switch c := p.src[p.pos]; {
		case c == '"':
			p.pos++
			for p.pos < len(p.src) && p.src[p.pos] != '"' {
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				out = append(out, p.classSym(class{ranges: []rng{{r, r}}}))
			}
			if p.pos >= len(p.src) {
				return nil, p.errAt(p.pos, "unexpected end of input in a literal")
			}
			p.pos++
		case c == '[':
			cl, err := p.charClass()
			if err != nil {
				return nil, err
			}
			out = append(out, p.classSym(cl))
		case isWordChar(c):
			at := p.pos
			n, _ := p.name()
			out = append(out, sym{kind: symRef, arg: p.ruleID(n, at)})
		case c == '(':
			if p.depth++; p.depth > maxNesting {
				return nil, fmt.Errorf("%w: parentheses nested deeper than %d", ErrTooComplex, maxNesting)
			}
			open := p.pos
			p.pos++
			p.space(true)
			alts, err := p.alternates(name, true)
			if err != nil {
				return nil, err
			}
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return nil, p.errAt(open, "unmatched (")
			}
			p.pos++
			p.depth--
			id, err := p.newRule(name)
			if err != nil {
				return nil, err
			}
			p.rules[id] = alts
			out = append(out, sym{kind: symRef, arg: id})
		case c == '.':
			p.pos++
			out = append(out, p.classSym(class{neg: true}))
		case c == '*' || c == '+' || c == '?' || c == '{':
			if last < 0 {
				return nil, p.errAt(p.pos, "expecting an item before %q", c)
			}
			lo, hi, err := p.repetition()
			if err != nil {
				return nil, err
			}
			if out, err = p.repeat(out, last, lo, hi, name); err != nil {
				return nil, err
			}
			p.space(nested)
			continue
		default:
			return out, nil
		}
		last = start
		if p.nsyms += len(out) - start; p.nsyms > maxSymbols {
			return nil, fmt.Errorf("%w: more than %d symbols", ErrTooComplex, maxSymbols)
		}
		p.space(nested)
	}
	return out, nil
}

// repetition parses * + ? {m} {m,} {m,n}: hi < 0 is unbounded.
func (p *parser) repetition() (lo, hi int, err error) {
	switch p.src[p.pos] {
	case '*':
		p.pos++
		return 0, -1, nil
	case '+':
		p.pos++
		return 1, -1, nil
	case '?':
		p.pos++
		return 0, 1, nil
	}
	open := p.pos
	p.pos++
	p.space(false)
	num := func() (int, bool) {
		start := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		n, err := strconv.Atoi(p.src[start:p.pos])
		return n, err == nil || p.pos > start
	}
	lo, ok := num()
	if !ok {
		return 0, 0, p.errAt(p.pos, "expecting a repetition count")
	}
	if lo > maxSymbols {
		return 0, 0, fmt.Errorf("%w: a repetition of %d", ErrTooComplex, lo)
	}
	hi = lo
	p.space(false)
	if p.pos < len(p.src) && p.src[p.pos] == ',' {
		p.pos++
		p.space(false)
		hi = -1
		if p.pos < len(p.src) && p.src[p.pos] != '}' {
			if hi, ok = num(); !ok {
				return 0, 0, p.errAt(p.pos, "expecting a repetition count")
			}
			if hi > maxSymbols {
				return 0, 0, fmt.Errorf("%w: a repetition of up to %d", ErrTooComplex, hi)
			}
		}
		p.space(false)
	}
	if p.pos >= len(p.src) || p.src[p.pos] != '}' {
		return 0, 0, p.errAt(open, "expecting } to end the repetition")
	}
	p.pos++
	if hi >= 0 && hi < lo {
		return 0, 0, p.errAt(open, "repetition {%d,%d}: the maximum is below the minimum", lo, hi)
	}
	return lo, hi, nil
}

// repeat rewrites out[last:] (S) repeated lo to hi times, as llama.cpp:
// S{m,n} is S m times then S'(n-m), S'(k) ::= S S'(k-1) | ; S{m,} is S m
// times then S' ::= S S' | .
func (p *parser) repeat(out []sym, last, lo, hi int, name string) ([]sym, error) {
	item := append([]sym(nil), out[last:]...)
	nOpt := 1
	if hi >= 0 {
		nOpt = hi - lo
	}
	if cost := (max(lo, 1) + nOpt) * len(item); p.nsyms+cost > maxSymbols {
		return nil, fmt.Errorf("%w: a repetition of %d symbols {%d,%d}", ErrTooComplex, len(item), lo, hi)
	}
	p.nsyms += (max(lo, 1) + nOpt) * len(item)
	out = out[:last]
	for range lo {
		out = append(out, item...)
	}
	var prev int32 = -1
	for i := range nOpt {
		id, err := p.newRule(name)
		if err != nil {
			return nil, err
		}
		rec := append([]sym(nil), item...)
		switch {
		case hi < 0:
			rec = append(rec, sym{kind: symRef, arg: id})
		case i > 0:
			rec = append(rec, sym{kind: symRef, arg: prev})
		}
		p.rules[id] = [][]sym{rec, nil}
		prev = id
	}
	if nOpt > 0 {
		out = append(out, sym{kind: symRef, arg: prev})
	}
	return out, nil
}

// char parses one character of a literal or class, with llama.cpp's
// escapes: \x.. \u.... \U........ \t \r \n \\ \" \[ \] (and \- in a class).
func (p *parser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		return r, nil
	}
	at := p.pos
	if p.pos+1 >= len(p.src) {
		return 0, p.errAt(at, "unexpected end of input after \\")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
	if digits > 0 {
		if p.pos+digits > len(p.src) {
			return 0, p.errAt(at, "expecting %d hex digits after \\%c", digits, c)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+digits], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, p.errAt(at, "bad escape \\%c%s", c, p.src[p.pos:p.pos+digits])
		}
		p.pos += digits
		return rune(v), nil
	}
	switch c {
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case 'n':
		return '\n', nil
	case '\\', '"', '[', ']', '-':
		return rune(c), nil
	}
	return 0, p.errAt(at, "unknown escape \\%c", c)
}

func (p *parser) charClass() (class, error) {
	open := p.pos
	p.pos++
	var cl class
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		cl.neg = true
		p.pos++
	}
	for p.pos < len(p.src) && p.src[p.pos] != ']' {
		lo, err := p.char()
		if err != nil {
			return cl, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return cl, err
			}
		}
		cl.ranges = append(cl.ranges, rng{lo, hi})
	}
	if p.pos >= len(p.src) {
		return cl, p.errAt(open, "unexpected end of input in a character class")
	}
	p.pos++
	return cl, nil
}

// classSym interns a class and returns its symbol.
func (p *parser) classSym(c class) sym {
	var b strings.Builder
	if c.neg {
		b.WriteByte('^')
	}
	for _, r := range c.ranges {
		fmt.Fprintf(&b, "%x-%x,", r.lo, r.hi)
	}
	key := b.String()
	id, ok := p.classID[key]
	if !ok {
		id = int32(len(p.classes))
		p.classes = append(p.classes, c)
		p.classID[key] = id
	}
	return sym{kind: symClass, arg: id}
}
