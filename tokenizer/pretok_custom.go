package tokenizer

// Hand-written splitters for the two patterns llama.cpp does not run through
// a regex engine (unicode.cpp's unicode_regex_split_custom_*). They follow
// its code rather than the regex where the two differ (a codepoint that no
// branch takes becomes a word of its own), so the words are llama.cpp's.

const (
	gpt2Pattern   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	llama3Pattern = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// fragment is a view of one fragment's codepoints where positions past the
// end read as "nothing" (no class at all), as llama.cpp's _get_flags does.
type fragment []rune

const outOfRange = -1

func (f fragment) at(i int) rune {
	if i < len(f) {
		return f[i]
	}
	return outOfRange
}
func (f fragment) letter(i int) bool { return i < len(f) && isLetter(f[i]) }
func (f fragment) number(i int) bool { return i < len(f) && isNumber(f[i]) }
func (f fragment) space(i int) bool  { return i < len(f) && isSpace(f[i]) }

// punct: a codepoint that is neither space, letter nor number.
func (f fragment) punct(i int) bool {
	return i < len(f) && !isSpace(f[i]) && !isLetter(f[i]) && !isNumber(f[i])
}

// contraction returns the length of 's 't 're 've 'm 'll 'd at i (0 if
// none); fold lower-cases ASCII first (llama3's case-insensitive form).
func (f fragment) contraction(i int, fold bool) int {
	if f.at(i) != '\'' || i+1 >= len(f) {
		return 0
	}
	lower := func(r rune) rune {
		if fold && r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	switch c := lower(f[i+1]); c {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v', 'l':
		if i+2 < len(f) {
			c2 := lower(f[i+2])
			if (c == 'r' || c == 'v') && c2 == 'e' || c == 'l' && c2 == 'l' {
				return 3
			}
		}
	}
	return 0
}

// trailingSpaces handles \s+(?!\S) then \s+ at pos: a run of spaces
// followed by more text leaves its last space for the next word.
func (f fragment) trailingSpaces(pos int) int {
	n := 0
	for f.space(pos + n) {
		n++
	}
	if n > 1 && pos+n < len(f) {
		return n - 1
	}
	return n
}

// splitGPT2 appends the word lengths of f under gpt2Pattern.
func splitGPT2(f fragment, out []int) []int {
	for pos := 0; pos < len(f); {
		if n := f.contraction(pos, false); n > 0 {
			out, pos = append(out, n), pos+n
			continue
		}
		start := pos
		lead := 0
		if f[pos] == ' ' {
			lead = 1
		}
		switch p := pos + lead; {
		case f.letter(p):
			for pos = p; f.letter(pos); pos++ {
			}
		case f.number(p):
			for pos = p; f.number(pos); pos++ {
			}
		case f.punct(p):
			for pos = p; f.punct(pos); pos++ {
			}
		default:
			if n := f.trailingSpaces(pos); n > 0 {
				pos += n
			} else {
				pos++
			}
		}
		out = append(out, pos-start)
	}
	return out
}

// splitLlama3 appends the word lengths of f under llama3Pattern.
func splitLlama3(f fragment, out []int) []int {
	for pos := 0; pos < len(f); {
		if n := f.contraction(pos, true); n > 0 {
			out, pos = append(out, n), pos+n
			continue
		}
		start, r := pos, f[pos]
		switch {
		// [^\r\n\p{L}\p{N}]?\p{L}+
		case r != '\r' && r != '\n' && !f.number(pos) && (f.letter(pos) || f.letter(pos+1)):
			for pos++; f.letter(pos); pos++ {
			}
		// \p{N}{1,3}
		case f.number(pos):
			for ini := pos; f.number(pos); {
				if pos++; pos-ini >= 3 {
					out = append(out, pos-ini)
					ini, start = pos, pos
				}
			}
		// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
		case f.punct(pos) || r == ' ' && f.punct(pos+1):
			if r == ' ' {
				pos++
			}
			for f.punct(pos) {
				pos++
			}
			for c := f.at(pos); c == '\r' || c == '\n'; c = f.at(pos) {
				pos++
			}
		default:
			// \s*[\r\n]+ up to the last newline of the run, else the spaces.
			n, lastNL := 0, -1
			for ; f.space(pos + n); n++ {
				if c := f[pos+n]; c == '\r' || c == '\n' {
					lastNL = pos + n + 1
				}
			}
			switch {
			case lastNL > 0:
				pos = lastNL
			case n > 0:
				pos += f.trailingSpaces(pos)
			default:
				pos++
			}
		}
		if pos > start {
			out = append(out, pos-start)
		}
	}
	return out
}
