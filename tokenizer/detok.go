package tokenizer

import (
	"slices"
	"unicode/utf8"
)

// Detokenizer turns a stream of token ids into text deltas that are always
// valid UTF-8 and never split a character: bytes of an incomplete character
// (from byte-fallback pieces) are held back until the character completes,
// and a byte sequence that can never be valid UTF-8 becomes U+FFFD, one per
// invalid byte as Go's range over a string and WHATWG decoders count them.
type Detokenizer struct {
	tok     *Tokenizer
	prev    int
	pending []byte
	keep    []int // control tokens written as their text
}

// Keep makes the control tokens ids write their text (a tool-call
// format's markers); other control tokens write nothing.
func (d *Detokenizer) Keep(ids []int) { d.keep = ids }

// NewDetokenizer starts a stream after the token prev (the last prompt token).
func NewDetokenizer(tok *Tokenizer, prev int) *Detokenizer {
	return &Detokenizer{tok: tok, prev: prev}
}

// Add appends id and returns the text that is now complete.
func (d *Detokenizer) Add(id int) string {
	if len(d.keep) > 0 && slices.Contains(d.keep, id) && d.tok.IsControl(id) {
		d.pending = append(d.pending, d.tok.PieceText(id)...)
	} else {
		d.pending = append(d.pending, d.tok.TokenBytes(d.prev, id)...)
	}
	d.prev = id
	out, n := validPrefix(d.pending)
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns whatever is held back, for the end of the stream: an
// incomplete character there can no longer complete and is one U+FFFD.
func (d *Detokenizer) Flush() string {
	if len(d.pending) == 0 {
		return ""
	}
	d.pending = d.pending[:0]
	return string(utf8.RuneError)
}

// validPrefix returns the valid UTF-8 text of b, with invalid bytes replaced,
// and how many bytes of b it covers: all but a trailing sequence that is
// the valid start of a character still missing bytes.
func validPrefix(b []byte) (string, int) {
	if utf8.Valid(b) {
		return string(b), len(b)
	}
	out := make([]byte, 0, len(b)+3)
	i := 0
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			if !utf8.FullRune(b[i:]) {
				break // could still complete: hold it
			}
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			continue
		}
		out = append(out, b[i:i+size]...)
		i += size
	}
	return string(out), i
}
