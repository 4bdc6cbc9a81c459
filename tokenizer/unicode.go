package tokenizer

import "unicode"

// cat is a codepoint's class as llama.cpp's pre-tokenizers see it: one
// general category (N, L, P, M, S, or other) and, apart, the White_Space
// property.
type cat uint8

const (
	catOther cat = iota
	catNumber
	catLetter
	catPunct
	catMark
	catSymbol
)

// cpClass holds the class of every codepoint below 0x10000 (the rest are
// classified on the fly); bit 7 marks White_Space.
var cpClass = func() []uint8 {
	t := make([]uint8, 0x10000)
	for r := range t {
		t[r] = classify(rune(r))
	}
	return t
}()

const wsBit = 0x80

func classify(r rune) uint8 {
	var c cat
	switch {
	case unicode.Is(unicode.N, r):
		c = catNumber
	case unicode.Is(unicode.L, r):
		c = catLetter
	case unicode.Is(unicode.P, r):
		c = catPunct
	case unicode.Is(unicode.M, r):
		c = catMark
	case unicode.Is(unicode.S, r):
		c = catSymbol
	}
	if unicode.Is(unicode.White_Space, r) {
		return uint8(c) | wsBit
	}
	return uint8(c)
}

func class(r rune) uint8 {
	if r >= 0 && r < 0x10000 {
		return cpClass[r]
	}
	return classify(r)
}

func isSpace(r rune) bool  { return class(r)&wsBit != 0 }
func isLetter(r rune) bool { return cat(class(r)&^wsBit) == catLetter }
func isNumber(r rune) bool { return cat(class(r)&^wsBit) == catNumber }

// collapse maps each codepoint to one the ASCII-only regexes of llama.cpp
// can class: ASCII stays itself, non-ASCII whitespace becomes \v, and the
// rest one stand-in per category (0xD1 number, 0xD2 letter, 0xD3
// punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 other), as unicode.cpp does.
func collapse(cps []rune) []rune {
	out := make([]rune, len(cps))
	for i, r := range cps {
		switch c := class(r); {
		case r < 128:
			out[i] = r
		case c&wsBit != 0:
			out[i] = 0x0B
		default:
			out[i] = 0xD0 + rune(c)
		}
	}
	return out
}

// spacesToVT replaces non-ASCII whitespace with \v, for regexes without
// Unicode classes that run on the codepoints themselves.
func spacesToVT(cps []rune) []rune {
	out := make([]rune, len(cps))
	for i, r := range cps {
		if r > 0x7F && isSpace(r) {
			r = 0x0B
		}
		out[i] = r
	}
	return out
}

// bytesToRunes is GPT-2's byte-level alphabet: printable Latin-1 bytes stand
// for themselves, the other 68 take codepoints from 256 up, in byte order.
var bytesToRunes, runesToBytes = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	n := rune(0)
	for b := range 256 {
		switch {
		case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE:
			b2r[b] = rune(b)
		default:
			b2r[b] = 256 + n
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()
