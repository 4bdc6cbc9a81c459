package grammar

import (
	"math/big"
	"strings"
)

// Numbers under bounds (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum) and multipleOf, which llama.cpp and the other servers
// leave unenforced: batchd writes them as a finite automaton over the
// number's characters, minimised, one rule a state. The numbers it admits
// are JSON numbers without an exponent, at most 16 digits before the point
// and 16 after (llama.cpp's limits for a number): a subset of the valid
// ones, never a wider set.

const (
	maxIntDigits  = 16
	maxFracDigits = 16
	// maxMultipleOf bounds multipleOf's numerator (its remainder is a
	// state of the automaton), maxNumberStates the automaton before
	// minimisation.
	maxMultipleOf   = 1000
	maxNumberStates = 200000
)

// limit is a bound on a number's magnitude: its integer digits and its
// fraction's (no trailing zeros), and whether it is excluded.
type limit struct {
	set      bool
	int      string // "0" or no leading zeros
	frac     string
	excluded bool
}

func limitOf(r *big.Rat, excluded bool) limit {
	s := new(big.Rat).Abs(r).FloatString(64) // a decimal from JSON: exact in 64 places
	i, f, _ := strings.Cut(s, ".")
	return limit{set: true, int: i, frac: strings.TrimRight(f, "0"), excluded: excluded}
}

// numberSpec is what a schema asks of a number.
type numberSpec struct {
	lo, hi     *big.Rat // nil: no bound
	loEx, hiEx bool
	integer    bool
	multiple   int64 // multipleOf as multiple / 10^scale; 0: none
	scale      int
}

// hasNumberConstraints reports whether s bounds a number (or asks for a
// multiple), so that numberRange must write its rule.
func hasNumberConstraints(s value) bool {
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
		if s.has(k) {
			return true
		}
	}
	return false
}

// intBoundsOnly: an integer's bounds that llama.cpp's integer rule writes
// (whole numbers within int64, no multipleOf), so its grammar stays
// llama.cpp's.
func intBoundsOnly(s value) bool {
	if s.has("multipleOf") {
		return false
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if v, ok := s.get(k); ok {
			if _, isInt := s.int(k); !isInt || v.kind == vBool {
				return false
			}
		}
	}
	return true
}

// readNumberSpec reads the bounds (draft 6's numeric exclusive bounds and
// draft 4's boolean ones) and multipleOf.
func (c *converter) readNumberSpec(s value, integer bool) (numberSpec, bool) {
	sp := numberSpec{integer: integer}
	rat := func(k string) (*big.Rat, bool, bool) {
		v, ok := s.get(k)
		if !ok || v.kind != vNumber {
			return nil, false, ok && v.kind != vBool
		}
		r, ok := new(big.Rat).SetString(v.str)
		return r, ok, !ok
	}
	tighter := func(cur *big.Rat, curEx bool, r *big.Rat, ex bool, lower bool) (*big.Rat, bool) {
		if cur == nil {
			return r, ex
		}
		switch c := r.Cmp(cur); {
		case c == 0:
			return cur, curEx || ex
		case c > 0 == lower:
			return r, ex
		}
		return cur, curEx
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		r, ok, bad := rat(k)
		if bad {
			if v, _ := s.get(k); v.kind != vBool {
				c.fail("", k, "%s: want a number", v.dump())
				return sp, false
			}
		}
		if !ok {
			continue
		}
		lower := strings.Contains(k, "inimum")
		ex := strings.HasPrefix(k, "exclusive") || isTrue(s, "exclusive"+strings.ToUpper(k[:1])+k[1:])
		if lower {
			sp.lo, sp.loEx = tighter(sp.lo, sp.loEx, r, ex, true)
		} else {
			sp.hi, sp.hiEx = tighter(sp.hi, sp.hiEx, r, ex, false)
		}
	}
	if m, ok, bad := rat("multipleOf"); bad || ok && m.Sign() <= 0 {
		c.fail("", "multipleOf", "want a number above 0")
		return sp, false
	} else if ok {
		scaled, ten := new(big.Rat).Set(m), big.NewRat(10, 1)
		for sp.scale = 0; !scaled.IsInt() && sp.scale <= maxFracDigits; sp.scale++ {
			scaled.Mul(scaled, ten)
		}
		if !scaled.IsInt() || !scaled.Num().IsInt64() || scaled.Num().Int64() > maxMultipleOf {
			c.fail("", "multipleOf", "%s: batchd enforces multiples of a/10^k with a at most %d and k at most %d",
				m.RatString(), maxMultipleOf, maxFracDigits)
			return sp, false
		}
		sp.multiple = scaled.Num().Int64()
	}
	if sp.integer {
		sp.scale = 0
	}
	return sp, true
}

// numberRange is the rule of a number that meets s's bounds and multipleOf.
func (c *converter) numberRange(s value, name string, integer bool) string {
	sp, ok := c.readNumberSpec(s, integer)
	if !ok {
		return "space"
	}
	d, err := buildNumberDFA(sp)
	if err != nil {
		return c.fail("", "minimum", "%v", err)
	}
	if d.empty() {
		return c.fail("", "minimum", "no number meets these bounds")
	}
	return c.emitDFA(d, dashed(name, "number")) + c.valueEnd()
}

// numState is a state of the automaton before minimisation.
type numState struct {
	phase   uint8 // numStart, numMinus, numInt, numZero, numPoint, numFrac
	neg     bool
	intLen  uint8
	fracLen uint8
	lo, hi  cmp
	rem     int32
}

const (
	numStart uint8 = iota
	numMinus
	numInt  // integer digits, the first not 0
	numZero // the integer part is 0
	numPoint
	numFrac
)

// cmp compares the magnitude read so far with a limit, left to right:
// within the integer digits (pos of them read, ord the lexicographic order
// of those digits against the limit's first pos), then the fraction.
type cmp struct {
	pos int8
	ord int8 // -1, 0, 1: so far below, equal to, above the limit's digits
	// fixed: the order is final (a longer or shorter integer part is
	// settled once the part ends, a fraction digit that differs at once).
	fixed bool
}

// dfa is a minimised automaton: state 0 starts; next[s][sym] is -1 or a
// state; accept[s] whether the input may end there.
type dfa struct {
	next   [][numSyms]int32
	accept []bool
}

const numSyms = 12 // 0-9, '-', '.'

func symOf(i int) byte {
	switch i {
	case 10:
		return '-'
	case 11:
		return '.'
	}
	return byte('0' + i)
}

func (d *dfa) empty() bool { return len(d.next) == 0 }

// limits are the magnitude's limits for one sign: x >= lo and x <= hi on
// x = -m means m <= -lo and m >= -hi.
func (sp numberSpec) limits(neg bool) (lo, hi limit, possible bool) {
	zero := new(big.Rat)
	if !neg {
		if sp.hi != nil && (sp.hi.Sign() < 0 || sp.hi.Sign() == 0 && sp.hiEx) {
			return lo, hi, false
		}
		if sp.lo != nil && sp.lo.Sign() >= 0 {
			lo = limitOf(sp.lo, sp.loEx)
		}
		if sp.hi != nil {
			hi = limitOf(sp.hi, sp.hiEx)
		}
		return lo, hi, true
	}
	if sp.lo != nil && (sp.lo.Sign() > 0 || sp.lo.Sign() == 0) {
		return lo, hi, false // no negative number; -0 is written 0
	}
	lo = limitOf(zero, true) // a negative number is not zero
	if sp.hi != nil && sp.hi.Sign() < 0 {
		lo = limitOf(sp.hi, sp.hiEx)
	}
	if sp.lo != nil {
		hi = limitOf(sp.lo, sp.loEx)
	}
	return lo, hi, true
}

// step advances a comparison over one magnitude digit (point: the
// integer part ended).
func (l limit) step(c cmp, digit byte, frac bool) cmp {
	if !l.set || c.fixed {
		return c
	}
	if !frac {
		if int(c.pos) >= len(l.int) { // longer than the limit's integer part
			return cmp{ord: 1, fixed: true}
		}
		if c.ord == 0 {
			c.ord = int8(sign(int(digit) - int(l.int[c.pos])))
		}
		c.pos++
		return c
	}
	// In the fraction: c.pos counts fraction digits; the integer parts
	// were equal (else fixed at the point).
	var want byte = '0'
	if int(c.pos) < len(l.frac) {
		want = l.frac[c.pos]
	}
	c.pos++
	if s := sign(int(digit) - int(want)); s != 0 {
		return cmp{ord: int8(s), fixed: true}
	}
	return c
}

// point settles the integer part's comparison when it ends.
func (l limit) point(c cmp) cmp {
	if !l.set || c.fixed {
		return c
	}
	switch {
	case int(c.pos) < len(l.int):
		return cmp{ord: -1, fixed: true}
	case c.ord != 0:
		return cmp{ord: c.ord, fixed: true}
	}
	return cmp{} // equal so far: the fraction decides, from its first digit
}

// final is the order of the whole magnitude against the limit (the input
// ends here; the integer part has been settled by point).
func (l limit) final(c cmp) int {
	if !l.set || c.fixed {
		return int(c.ord)
	}
	if int(c.pos) < len(l.frac) {
		return -1 // the limit has nonzero digits further on
	}
	return 0
}

func (l limit) okLow(ord int) bool  { return !l.set || ord > 0 || ord == 0 && !l.excluded }
func (l limit) okHigh(ord int) bool { return !l.set || ord < 0 || ord == 0 && !l.excluded }

// deadLow and deadHigh: a state that no continuation can bring within.
func (l limit) deadLow(c cmp) bool  { return l.set && c.fixed && c.ord < 0 }
func (l limit) deadHigh(c cmp) bool { return l.set && c.fixed && c.ord > 0 }

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}
