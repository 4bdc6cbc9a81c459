package grammar

import (
	"strconv"
	"strings"
)

// intRange is the rule of an integer between a schema's bounds, as
// llama.cpp's _generate_min_max_int writes it.
func (c *converter) intRange(s value) string {
	var lo, hi *int64
	if v, ok := s.int("minimum"); ok {
		lo = &v
	} else if v, ok := s.int("exclusiveMinimum"); ok {
		v++
		lo = &v
	}
	if v, ok := s.int("maximum"); ok {
		hi = &v
	} else if v, ok := s.int("exclusiveMaximum"); ok {
		v--
		hi = &v
	}
	if lo == nil && hi == nil {
		return c.fail("", "minimum", "integer bounds must be integers")
	}
	if lo != nil && hi != nil && *lo > *hi {
		return c.fail("", "minimum", "%d is above the maximum %d: no integer fits", *lo, *hi)
	}
	var b strings.Builder
	minMaxInt(lo, hi, &b, 16, true)
	return b.String()
}

func digitRange(b *strings.Builder, from, to byte) {
	b.WriteByte('[')
	b.WriteByte(from)
	if from != to {
		b.WriteByte('-')
		b.WriteByte(to)
	}
	b.WriteByte(']')
}

// moreDigits is [0-9]{lo,hi}; hi < 0 is unbounded.
func moreDigits(b *strings.Builder, lo, hi int) {
	b.WriteString("[0-9]")
	if lo == hi && lo == 1 {
		return
	}
	b.WriteString("{" + strconv.Itoa(lo))
	if hi != lo {
		b.WriteByte(',')
		if hi >= 0 {
			b.WriteString(strconv.Itoa(hi))
		}
	}
	b.WriteByte('}')
}

// uniformRange matches the numbers from from to to, both of one length.
func uniformRange(b *strings.Builder, from, to string) {
	i := 0
	for i < len(from) && from[i] == to[i] {
		i++
	}
	if i > 0 {
		b.WriteString(`"` + from[:i] + `"`)
	}
	if i >= len(from) {
		return
	}
	if i > 0 {
		b.WriteByte(' ')
	}
	subLen := len(from) - i - 1
	if subLen == 0 {
		digitRange(b, from[i], to[i])
		return
	}
	fromSub, toSub := from[i+1:], to[i+1:]
	zeros, nines := strings.Repeat("0", subLen), strings.Repeat("9", subLen)
	toReached := false
	b.WriteByte('(')
	if fromSub == zeros {
		digitRange(b, from[i], to[i]-1)
		b.WriteByte(' ')
		moreDigits(b, subLen, subLen)
	} else {
		b.WriteString("[" + from[i:i+1] + "] (")
		uniformRange(b, fromSub, nines)
		b.WriteByte(')')
		if from[i] < to[i]-1 {
			b.WriteString(" | ")
			if toSub == nines {
				digitRange(b, from[i]+1, to[i])
				toReached = true
			} else {
				digitRange(b, from[i]+1, to[i]-1)
			}
			b.WriteByte(' ')
			moreDigits(b, subLen, subLen)
		}
	}
	if !toReached {
		b.WriteString(" | ")
		digitRange(b, to[i], to[i])
		b.WriteByte(' ')
		uniformRange(b, zeros, toSub)
	}
	b.WriteByte(')')
}

// minMaxInt writes the integers in [lo, hi] (either bound may be nil).
func minMaxInt(lo, hi *int64, b *strings.Builder, decimals int, top bool) {
	ptr := func(v int64) *int64 { return &v }
	less := max(decimals-1, 1)
	switch {
	case lo != nil && hi != nil:
		mn, mx := *lo, *hi
		if mn < 0 && mx < 0 {
			b.WriteString(`"-" (`)
			minMaxInt(ptr(-mx), ptr(-mn), b, decimals, true)
			b.WriteByte(')')
			return
		}
		if mn < 0 {
			b.WriteString(`"-" (`)
			minMaxInt(ptr(0), ptr(-mn), b, decimals, true)
			b.WriteString(") | ")
			mn = 0
		}
		minS, maxS := strconv.FormatInt(mn, 10), strconv.FormatInt(mx, 10)
		for digits := len(minS); digits < len(maxS); digits++ {
			uniformRange(b, minS, strings.Repeat("9", digits))
			minS = "1" + strings.Repeat("0", digits)
			b.WriteString(" | ")
		}
		uniformRange(b, minS, maxS)
	case lo != nil:
		minOnly(*lo, b, decimals, top)
	case hi != nil:
		mx := *hi
		if mx >= 0 {
			if top {
				b.WriteString(`"-" [1-9] `)
				moreDigits(b, 0, less)
				b.WriteString(" | ")
			}
			minMaxInt(ptr(0), ptr(mx), b, decimals, true)
		} else {
			b.WriteString(`"-" (`)
			minMaxInt(ptr(-mx), nil, b, decimals, false)
			b.WriteByte(')')
		}
	}
}

// minOnly writes the integers from mn up.
func minOnly(mn int64, b *strings.Builder, decimals int, top bool) {
	ptr := func(v int64) *int64 { return &v }
	less := max(decimals-1, 1)
	switch {
	case mn < 0:
		b.WriteString(`"-" (`)
		minMaxInt(nil, ptr(-mn), b, decimals, false)
		b.WriteString(") | [0] | [1-9] ")
		moreDigits(b, 0, less)
	case mn == 0 && top:
		b.WriteString("[0] | [1-9] ")
		moreDigits(b, 0, less)
	case mn == 0:
		moreDigits(b, 1, decimals)
	case mn <= 9:
		c := byte('0' + mn)
		start := byte('0')
		if top {
			start = '1'
		}
		if c > start {
			digitRange(b, start, c-1)
			b.WriteByte(' ')
			moreDigits(b, 1, less)
			b.WriteString(" | ")
		}
		digitRange(b, c, '9')
		b.WriteByte(' ')
		moreDigits(b, 0, less)
	default:
		s := strconv.FormatInt(mn, 10)
		c := s[0]
		if c > '1' {
			start := byte('0')
			if top {
				start = '1'
			}
			digitRange(b, start, c-1)
			b.WriteByte(' ')
			moreDigits(b, len(s), less)
			b.WriteString(" | ")
		}
		digitRange(b, c, c)
		b.WriteString(" (")
		rest, _ := strconv.ParseInt(s[1:], 10, 64)
		minMaxInt(ptr(rest), nil, b, less, false)
		b.WriteByte(')')
		if c < '9' {
			b.WriteString(" | ")
			digitRange(b, c+1, '9')
			b.WriteByte(' ')
			moreDigits(b, len(s)-1, less)
		}
	}
}
