package tokenizer

import (
	"sort"
	"strings"
)

// special is a token that is cut out of text before encoding.
type special struct {
	id   int
	text string
	// control: a control or unknown token, cut out only with ParseSpecial;
	// user-defined tokens are cut out always.
	control bool
	// lstrip and rstrip eat the whitespace before or after a match.
	lstrip, rstrip bool
}

// frag is a piece of the text: a token (id >= 0) or raw text to encode.
type frag struct {
	id   int
	text string
}

// initSpecials lists the control, unknown and user-defined tokens by their
// text as stored (raw, before any space translation), longest first, and
// sets maxPiece. llama.cpp's cache_special_tokens.
func (t *Tokenizer) initSpecials(raw []string) {
	t.specials = t.specials[:0]
	for id, ty := range t.types {
		if ty != TokenControl && ty != TokenUnknown && ty != TokenUserDefined || raw[id] == "" {
			continue
		}
		t.specials = append(t.specials, special{id: id, text: raw[id], control: ty != TokenUserDefined})
		t.maxPiece = max(t.maxPiece, len(raw[id]))
	}
	sort.SliceStable(t.specials, func(i, j int) bool { return len(t.specials[i].text) > len(t.specials[j].text) })
}

// setStrip marks special tokens by text for lstrip/rstrip.
func (t *Tokenizer) setStrip(match func(s *special) (lstrip, rstrip, ok bool)) {
	for i := range t.specials {
		if l, r, ok := match(&t.specials[i]); ok {
			t.specials[i].lstrip, t.specials[i].rstrip = l, r
		}
	}
}

// isCSpace is C's isspace in the C locale, which llama.cpp's strips use.
func isCSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// partition cuts the special tokens out of text, as llama.cpp's
// tokenizer_st_partition does: each special token in turn, longest first,
// splits every raw fragment at each of its occurrences.
func (t *Tokenizer) partition(text string, parseSpecial bool) []frag {
	if text == "" {
		return nil
	}
	frags := []frag{{id: -1, text: text}}
	for _, sp := range t.specials {
		if sp.control && !parseSpecial || !strings.Contains(text, sp.text) {
			continue
		}
		out := make([]frag, 0, len(frags)+2)
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, f)
				continue
			}
			out = sp.cut(f.text, out)
		}
		frags = out
	}
	return frags
}

// cut splits raw text s at every occurrence of sp.
func (sp special) cut(s string, out []frag) []frag {
	for {
		i := strings.Index(s, sp.text)
		if i < 0 {
			break
		}
		left := s[:i]
		if sp.lstrip {
			left = strings.TrimRightFunc(left, func(r rune) bool { return r < 0x80 && isCSpace(byte(r)) })
		}
		if left != "" {
			out = append(out, frag{id: -1, text: left})
		}
		out = append(out, frag{id: sp.id})
		s = s[i+len(sp.text):]
		if sp.rstrip {
			s = strings.TrimLeftFunc(s, func(r rune) bool { return r < 0x80 && isCSpace(byte(r)) })
		}
	}
	if s != "" {
		out = append(out, frag{id: -1, text: s})
	}
	return out
}

// ControlTexts lists the texts of the tokens that only ParseSpecial cuts
// out of text (control and unknown ones: <|im_start|>, <|eot_id|>, <s>):
// what a chat message's content must not be able to spell.
func (t *Tokenizer) ControlTexts() []string {
	var out []string
	for _, sp := range t.specials {
		if sp.control {
			out = append(out, sp.text)
		}
	}
	return out
}

// RemoveMark removes the text marks from s: a lone mark goes, a doubled
// one stands for one mark (Options.TextMark).
func RemoveMark(s string, mark rune) string {
	m := string(mark)
	if !strings.Contains(s, m) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for { // bytewise: text that is not valid UTF-8 stays as it is
		i := strings.Index(s, m)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+len(m):]
		if strings.HasPrefix(s, m) {
			b.WriteString(m)
			s = s[len(m):]
		}
	}
}

// SpecialID returns the control, unknown or user-defined token whose text
// is text, or -1.
func (t *Tokenizer) SpecialID(text string) int {
	for _, sp := range t.specials {
		if sp.text == text {
			return sp.id
		}
	}
	return -1
}
