package model

import "unicode/utf8"

// Detokenizer turns a stream of token ids into text deltas that never split
// a UTF-8 character: bytes of an incomplete character (from byte-fallback
// pieces) are held back until the character completes.
type Detokenizer struct {
	tok     *Tokenizer
	prev    int
	pending []byte
}

// NewDetokenizer starts a stream after the token prev (the last prompt token).
func NewDetokenizer(tok *Tokenizer, prev int) *Detokenizer {
	return &Detokenizer{tok: tok, prev: prev}
}

// Add appends id and returns the text that is now complete.
func (d *Detokenizer) Add(id int) string {
	d.pending = append(d.pending, d.tok.TokenBytes(d.prev, id)...)
	d.prev = id
	n := completePrefix(d.pending)
	out := string(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns whatever is held back, for the end of the stream; invalid
// bytes come out as they are, as the whole text would have them.
func (d *Detokenizer) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix returns the length of b without a trailing incomplete UTF-8
// sequence. Invalid bytes are not held: only a valid start that could still
// complete is.
func completePrefix(b []byte) int {
	for back := 1; back <= 3 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c&0xC0 == 0x80 {
			continue // continuation byte: look further back for the lead
		}
		if !utf8.RuneStart(c) || c < 0x80 {
			return len(b)
		}
		need := 0
		switch {
		case c&0xE0 == 0xC0:
			need = 2
		case c&0xF0 == 0xE0:
			need = 3
		case c&0xF8 == 0xF0:
			need = 4
		default:
			return len(b)
		}
		if back < need {
			return len(b) - back
		}
		return len(b)
	}
	return len(b)
}
