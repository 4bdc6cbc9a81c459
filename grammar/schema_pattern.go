package grammar

import (
	"fmt"
	"strconv"
	"strings"
)

// pattern turns a regular expression (^...$, the JSON Schema pattern a
// string's content must match) into rules, as llama.cpp's _visit_pattern:
// literals, ., [classes], groups, |, * + ? and {m,n}.
func (c *converter) pattern(pat, name string) string {
	body, ok := c.patternBody(pat, name, true)
	if !ok {
		return "space"
	}
	return c.addRule(name, `"\"" (`+body+`) "\""`+c.valueEnd())
}

// rawPattern is a pattern's rule for text as it is, not a JSON string.
func (c *converter) rawPattern(pat, name string) string {
	body, ok := c.patternBody(pat, name, false)
	if !ok {
		return "space"
	}
	return c.addRule(name, body)
}

// patternBody converts pat; in a JSON string (inJSON) a quote or a
// backslash is written escaped and "." and negated classes leave out what
// JSON must escape, so that the output stays a JSON string (llama.cpp
// writes them raw, and its output then does not parse).
func (c *converter) patternBody(pat, name string, inJSON bool) (string, bool) {
	if !strings.HasPrefix(pat, "^") || !strings.HasSuffix(pat, "$") || len(pat) < 2 {
		c.fail("", "pattern", "%q: a pattern must start with ^ and end with $", pat)
		return "", false
	}
	p := &patternConv{c: c, pat: pat[1 : len(pat)-1], name: name, sub: map[string]string{}, json: inJSON}
	body := p.toRule(p.transform(false))
	if p.err != "" {
		c.fail("", "pattern", "%q: %s", pat, p.err)
		return "", false
	}
	return body, true
}

type patternConv struct {
	c    *converter
	pat  string
	i    int
	name string
	sub  map[string]string // repeated parts that got a rule of their own
	err  string
	deep int
	json bool // inside a JSON string
}

type piece struct {
	text    string
	literal bool
}

func (p *patternConv) toRule(x piece) string {
	if x.literal {
		return `"` + x.text + `"`
	}
	return x.text
}

const nonLiteral = "|.()[]{}*+?"

// escapedInRegex are the characters a backslash makes literal in a regex
// but that a GBNF literal takes as they are.
const escapedInRegex = "^$.[]()|{}*+?"

func (p *patternConv) transform(nested bool) piece {
	start := p.i
	var seq []piece
	if p.deep++; p.deep > maxNesting {
		p.err = "groups nested too deep"
		return piece{}
	}
	defer func() { p.deep-- }()
	for p.i < len(p.pat) && p.err == "" {
		switch ch := p.pat[p.i]; ch {
		case '.':
			dot := `[^\x0A\x0D]`
			if p.json {
				dot = `[^"\\\x7F\x00-\x1F]`
			}
			seq = append(seq, piece{text: p.c.addRule("dot", dot)})
			p.i++
		case '(':
			p.i++
			if p.i < len(p.pat) && p.pat[p.i] == '?' {
				p.err = fmt.Sprintf("unsupported syntax (? at %d", p.i)
				return piece{}
			}
			seq = append(seq, piece{text: "(" + p.toRule(p.transform(true)) + ")"})
		case ')':
			p.i++
			if !nested || start == 0 {
				p.err = "unbalanced parentheses"
				return piece{}
			}
			return p.joinPieces(seq)
		case '[':
			seq = append(seq, piece{text: p.class()})
		case '\\':
			if p.i+1 < len(p.pat) && strings.IndexByte("dwsDWS", p.pat[p.i+1]) >= 0 {
				seq = append(seq, piece{text: shorthand[p.pat[p.i+1]]})
				p.i += 2
				continue
			}
			seq = p.literal(seq)
		case '|':
			seq = append(seq, piece{text: "|"})
			p.i++
		case '*', '+', '?':
			if len(seq) == 0 {
				p.err = fmt.Sprintf("%q with nothing before it", ch)
				return piece{}
			}
			seq[len(seq)-1] = piece{text: p.toRule(seq[len(seq)-1]) + string(ch)}
			p.i++
		case '{':
			p.repeatCurly(seq)
		default:
			seq = p.literal(seq)
		}
	}
	if nested && p.err == "" {
		p.err = "unbalanced parentheses"
	}
	return p.joinPieces(seq)
}

// repeatCurly applies {m}, {m,} or {m,n} to the last piece.
func (p *patternConv) repeatCurly(seq []piece) {
	j := strings.IndexByte(p.pat[p.i:], '}')
	if j < 0 || len(seq) == 0 {
		p.err = "unbalanced curly brackets"
		return
	}
	body := p.pat[p.i+1 : p.i+j]
	p.i += j + 1
	nums := strings.Split(body, ",")
	lo, hi := 0, -1
	var err error
	switch len(nums) {
	case 1:
		if lo, err = strconv.Atoi(strings.TrimSpace(nums[0])); err == nil {
			hi = lo
		}
	case 2:
		if t := strings.TrimSpace(nums[0]); t != "" {
			lo, err = strconv.Atoi(t)
		}
		if t := strings.TrimSpace(nums[1]); t != "" && err == nil {
			hi, err = strconv.Atoi(t)
		}
	default:
		err = fmt.Errorf("bad")
	}
	if err != nil || lo < 0 || lo > maxSymbols || hi > maxSymbols {
		p.err = fmt.Sprintf("invalid quantifier {%s}", body)
		return
	}
	last := seq[len(seq)-1]
	item := last.text
	if last.literal {
		item = `"` + item + `"`
	} else {
		id, ok := p.sub[item]
		if !ok {
			id = p.c.addRule(fmt.Sprintf("%s-%d", p.name, len(p.sub)+1), item)
			p.sub[item] = id
		}
		item = id
	}
	seq[len(seq)-1] = piece{text: p.c.repetition(item, lo, hi, "")}
}

// literal reads a run of literal characters (a backslash escape among them).
func (p *patternConv) literal(seq []piece) []piece {
	var lit strings.Builder
	n := len(p.pat)
	for p.i < n {
		ch := p.pat[p.i]
		switch {
		case ch == '\\' && p.i < n-1:
			next := p.pat[p.i+1]
			if strings.IndexByte("dwsDWS", next) >= 0 { // a class: transform's
				if lit.Len() > 0 {
					seq = append(seq, piece{text: lit.String(), literal: true})
				}
				return seq
			}
			e, ok := literalEscape(next)
			if !ok {
				p.err = fmt.Sprintf("unsupported escape \\%c", next)
				return seq
			}
			if p.json && (next == '"' || next == '\\') {
				e = `\\` + e // JSON escapes these in the output
			}
			lit.WriteString(e)
			p.i += 2
		case ch == '"' && p.json:
			lit.WriteString(`\\\"`) // JSON's \" in the output
			p.i++
		case ch == '"':
			lit.WriteString(`\"`)
			p.i++
		case strings.IndexByte(nonLiteral, ch) < 0 &&
			(p.i == n-1 || lit.Len() == 0 || p.pat[p.i+1] == '.' || strings.IndexByte(nonLiteral, p.pat[p.i+1]) < 0):
			lit.WriteByte(ch)
			p.i++
		default:
			if lit.Len() == 0 { // a lone character a quantifier follows
				lit.WriteByte(ch)
				p.i++
			}
			return append(seq, piece{text: lit.String(), literal: true})
		}
	}
	if lit.Len() > 0 {
		seq = append(seq, piece{text: lit.String(), literal: true})
	}
	return seq
}

// shorthand are the regex classes \d \w \s and their negations as GBNF.
var shorthand = map[byte]string{'d': "[0-9]", 'w': "[a-zA-Z0-9_]", 's': `[ \t\n\r\x0B\x0C]`,
	'D': "[^0-9]", 'W': "[^a-zA-Z0-9_]", 'S': `[^ \t\n\r\x0B\x0C]`}

// literalEscape is a regex escape \c as GBNF literal text.
func literalEscape(c byte) (string, bool) {
	switch c {
	case 'n', 't', 'r':
		return `\` + string(c), true
	case 'f':
		return `\x0C`, true
	case 'v':
		return `\x0B`, true
	case '0':
		return `\x00`, true
	case '"', '\\':
		return `\` + string(c), true
	}
	if c < 0x80 && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
		return string(c), true
	}
	return "", false
}

// class copies a [...] class as GBNF, its escapes made GBNF's (\d and the
// like spelled out).
func (p *patternConv) class() string {
	var b strings.Builder
	b.WriteByte('[')
	j := p.i + 1
	if j < len(p.pat) && p.pat[j] == '^' {
		b.WriteByte('^')
		if p.json {
			b.WriteString(`"\\\x7F\x00-\x1F`)
		}
		j++
	}
	for ; j < len(p.pat) && p.pat[j] != ']'; j++ {
		ch := p.pat[j]
		if ch != '\\' || j+1 >= len(p.pat) {
			if ch == '"' {
				b.WriteString(`\"`)
			} else {
				b.WriteByte(ch)
			}
			continue
		}
		j++
		switch next := p.pat[j]; {
		case strings.IndexByte("dwsDWS", next) >= 0 && next >= 'a':
			b.WriteString(strings.Trim(shorthand[next], "[]"))
		case next == 'n' || next == 't' || next == 'r' || next == '\\' || next == ']' || next == '[' || next == '-' || next == '"':
			b.WriteString(`\` + string(next))
		default:
			e, ok := literalEscape(next)
			if !ok || strings.IndexByte("DWS", next) >= 0 {
				p.err = fmt.Sprintf("unsupported escape \\%c in a class", next)
				return ""
			}
			b.WriteString(e)
		}
	}
	if j >= len(p.pat) {
		p.err = "unbalanced square brackets"
		return ""
	}
	p.i = j + 1
	b.WriteByte(']')
	return b.String()
}

// joinPieces is llama.cpp's join_seq: consecutive literals merge into one
// (the legacy dialect merged only a sequence of literals alone), and the
// pieces are written one after another.
func (p *patternConv) joinPieces(seq []piece) piece {
	all := len(seq) > 0
	var lit strings.Builder
	for _, x := range seq {
		all = all && x.literal
		lit.WriteString(x.text)
	}
	if all {
		return piece{text: lit.String(), literal: true}
	}
	if !p.c.legacy {
		var merged []piece
		for _, x := range seq {
			if n := len(merged); n > 0 && x.literal && merged[n-1].literal {
				merged[n-1].text += x.text
				continue
			}
			merged = append(merged, x)
		}
		seq = merged
	}
	parts := make([]string, len(seq))
	for i, x := range seq {
		if x.literal {
			parts[i] = `"` + x.text + `"`
		} else {
			parts[i] = x.text
		}
	}
	return piece{text: strings.Join(parts, " ")}
}
