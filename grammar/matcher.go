package grammar

// partial is a character a token left unfinished: the bits of its bytes
// so far and how many continuation bytes it still needs (0: none).
type partial struct {
	value  rune
	remain int
}

// utf8Lead gives, by a byte's top four bits, how many bytes its character
// has (0: a continuation byte, which cannot start one), as llama.cpp's
// decode_utf8.
var utf8Lead = [16]int{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4}

// step advances (s, p) over one byte; a nil state is a rejection, a state
// with err a bound passed.
func step(s *state, p partial, c byte) (*state, partial) {
	if p.remain > 0 {
		if c>>6 != 2 {
			return nil, p
		}
		p.value = p.value<<6 | rune(c&0x3F)
		if p.remain--; p.remain > 0 {
			return s, p
		}
		return s.advance(p.value), partial{}
	}
	n := utf8Lead[c>>4]
	switch n {
	case 0:
		return nil, p
	case 1:
		return s.advance(rune(c)), p
	}
	masks := [5]byte{0, 0x7F, 0x1F, 0x0F, 0x07}
	return s, partial{value: rune(c & masks[n]), remain: n - 1}
}

// Matcher is one sequence's place in a grammar; it is not safe for
// concurrent use (one sequence, one goroutine: the engine's loop).
type Matcher struct {
	s *state
	p partial
}

// NewMatcher starts at the beginning of the grammar.
func (g *Grammar) NewMatcher() *Matcher { return &Matcher{s: g.initial} }

// walk advances (s, p) over b; ok is false when the grammar rejects it,
// err set when it would pass a bound. A token that ends inside a character
// is taken only if that character may still match, as llama.cpp decides.
func walk(s *state, p partial, b []byte) (*state, partial, bool, error) {
	for _, c := range b {
		if s, p = step(s, p, c); s == nil {
			return nil, p, false, nil
		}
		if s.err != nil {
			return nil, p, false, s.err
		}
	}
	if p.remain > 0 && !s.partialOK(p) {
		return nil, p, false, nil
	}
	return s, p, true, nil
}

// Allows reports whether the grammar takes the text of a token next. An
// empty text is never taken (end tokens are AllowsEnd's).
func (m *Matcher) Allows(text []byte) bool {
	if len(text) == 0 {
		return false
	}
	_, _, ok, _ := walk(m.s, m.p, text)
	return ok
}

// Accept advances over a token's text; it fails when the grammar rejects
// it or would pass a bound (ErrTooComplex), and the matcher then stays
// where it was.
func (m *Matcher) Accept(text []byte) error {
	s, p, ok, err := walk(m.s, m.p, text)
	switch {
	case err != nil:
		return err
	case !ok || len(text) == 0:
		return errRejected
	}
	m.s, m.p = s, p
	return nil
}

// AllowsEnd reports whether the text so far is a sentence of the grammar,
// so that an end-of-generation token may come (llama.cpp: a stack is empty).
func (m *Matcher) AllowsEnd() bool { return m.s.complete }

// Done reports whether nothing may follow: only the end.
func (m *Matcher) Done() bool { return m.s.done && m.p.remain == 0 }
