package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// buildNumberDFA is the minimised automaton of the numbers sp admits.
func buildNumberDFA(sp numberSpec) (*dfa, error) {
	var lims [2][2]limit // [neg][lo, hi]
	var possible [2]bool
	for i, neg := range []bool{false, true} {
		lims[i][0], lims[i][1], possible[i] = sp.limits(neg)
	}
	pow10 := make([]int64, maxFracDigits+1)
	pow10[0] = 1
	for i := 1; i < len(pow10); i++ {
		pow10[i] = pow10[i-1] * 10 % max(sp.multiple, 1)
	}
	idx := map[numState]int32{}
	var states []numState
	var next [][numSyms]int32
	var accept []bool
	add := func(s numState) int32 {
		if i, ok := idx[s]; ok {
			return i
		}
		i := int32(len(states))
		idx[s] = i
		states = append(states, s)
		return i
	}
	add(numState{})
	for i := 0; i < len(states); i++ {
		if len(states) > maxNumberStates {
			return nil, errors.New("these bounds and multipleOf make an automaton too large to enforce")
		}
		st := states[i]
		ni := 0
		if st.neg {
			ni = 1
		}
		lo, hi := lims[ni][0], lims[ni][1]
		var row [numSyms]int32
		for sym := range numSyms {
			row[sym] = -1
			t, ok := numStep(sp, st, symOf(sym), lims, possible)
			if !ok {
				continue
			}
			l2, h2 := lims[0][0], lims[0][1]
			if t.neg {
				l2, h2 = lims[1][0], lims[1][1]
			}
			if l2.deadLow(t.lo) || h2.deadHigh(t.hi) {
				continue
			}
			row[sym] = add(t)
		}
		next = append(next, row)
		accept = append(accept, numAccepts(sp, st, lo, hi, pow10))
	}
	return minimise(trim(next, accept))
}

// numStep is the state after one character, ok false if the character
// may not come here.
func numStep(sp numberSpec, st numState, ch byte, lims [2][2]limit, possible [2]bool) (numState, bool) {
	ni := 0
	if st.neg {
		ni = 1
	}
	lo, hi := lims[ni][0], lims[ni][1]
	digit := ch >= '0' && ch <= '9'
	rem := func() int32 {
		if sp.multiple == 0 {
			return 0
		}
		return int32((int64(st.rem)*10 + int64(ch-'0')) % sp.multiple)
	}
	t := st
	switch {
	case st.phase == numStart && ch == '-':
		if !possible[1] {
			return t, false
		}
		t.phase, t.neg = numMinus, true
		return t, true
	case (st.phase == numStart || st.phase == numMinus) && digit:
		if st.phase == numStart && !possible[0] {
			return t, false
		}
		t.phase = numInt
		if ch == '0' {
			t.phase = numZero
		}
		t.intLen, t.rem = 1, rem()
		t.lo, t.hi = lo.step(st.lo, ch, false), hi.step(st.hi, ch, false)
		return t, true
	case st.phase == numInt && digit:
		if st.intLen >= maxIntDigits {
			return t, false
		}
		t.intLen++
		t.rem = rem()
		t.lo, t.hi = lo.step(st.lo, ch, false), hi.step(st.hi, ch, false)
		return t, true
	case (st.phase == numInt || st.phase == numZero) && ch == '.':
		if sp.integer {
			return t, false
		}
		t.phase = numPoint
		t.lo, t.hi = lo.point(st.lo), hi.point(st.hi)
		return t, true
	case (st.phase == numPoint || st.phase == numFrac) && digit:
		if int(st.fracLen) >= maxFracDigits {
			return t, false
		}
		t.phase = numFrac
		t.fracLen++
		switch {
		case sp.multiple == 0:
		case int(st.fracLen) < sp.scale:
			t.rem = rem()
		case ch != '0': // past multipleOf's places only zeros keep a multiple
			return t, false
		}
		t.lo, t.hi = lo.step(st.lo, ch, true), hi.step(st.hi, ch, true)
		return t, true
	}
	return t, false
}

// numAccepts reports whether the number may end at st.
func numAccepts(sp numberSpec, st numState, lo, hi limit, pow10 []int64) bool {
	var cl, ch cmp
	switch st.phase {
	case numInt, numZero:
		cl, ch = lo.point(st.lo), hi.point(st.hi)
	case numFrac:
		cl, ch = st.lo, st.hi
	default:
		return false
	}
	if !lo.okLow(lo.final(cl)) || !hi.okHigh(hi.final(ch)) {
		return false
	}
	if sp.multiple == 0 {
		return true
	}
	pad := max(sp.scale-int(st.fracLen), 0)
	return int64(st.rem)*pow10[pad]%sp.multiple == 0
}

// trim drops the states from which no accepting state can be reached, and
// renumbers the rest (the start stays 0).
func trim(next [][numSyms]int32, accept []bool) ([][numSyms]int32, []bool) {
	live := slices.Clone(accept)
	for changed := true; changed; { // the automaton is acyclic and small: a few passes
		changed = false
		for s := len(next) - 1; s >= 0; s-- {
			if live[s] {
				continue
			}
			for _, t := range next[s] {
				if t >= 0 && live[t] {
					live[s], changed = true, true
					break
				}
			}
		}
	}
	if len(live) == 0 || !live[0] {
		return nil, nil
	}
	renum := make([]int32, len(next))
	n := int32(0)
	for s := range next {
		renum[s] = -1
		if live[s] {
			renum[s] = n
			n++
		}
	}
	outN := make([][numSyms]int32, 0, n)
	outA := make([]bool, 0, n)
	for s := range next {
		if !live[s] {
			continue
		}
		var row [numSyms]int32
		for sym, t := range next[s] {
			row[sym] = -1
			if t >= 0 {
				row[sym] = renum[t]
			}
		}
		outN, outA = append(outN, row), append(outA, accept[s])
	}
	return outN, outA
}

// minimise merges states with the same future (Moore's refinement).
func minimise(next [][numSyms]int32, accept []bool) (*dfa, error) {
	if len(next) == 0 {
		return &dfa{}, nil
	}
	class := make([]int32, len(next))
	for s, a := range accept {
		if a {
			class[s] = 1
		}
	}
	for {
		type sig struct {
			c   int32
			out [numSyms]int32
		}
		ids := map[sig]int32{}
		nc := make([]int32, len(next))
		for s := range next {
			k := sig{c: class[s]}
			for sym, t := range next[s] {
				k.out[sym] = -1
				if t >= 0 {
					k.out[sym] = class[t]
				}
			}
			id, ok := ids[k]
			if !ok {
				id = int32(len(ids))
				ids[k] = id
			}
			nc[s] = id
		}
		stable := len(ids) == countClasses(class)
		class = nc
		if stable {
			break
		}
	}
	// The start's class becomes state 0.
	order := map[int32]int32{class[0]: 0}
	for s := range next {
		if _, ok := order[class[s]]; !ok {
			order[class[s]] = int32(len(order))
		}
	}
	d := &dfa{next: make([][numSyms]int32, len(order)), accept: make([]bool, len(order))}
	for s := range next {
		c := order[class[s]]
		d.accept[c] = accept[s]
		for sym, t := range next[s] {
			d.next[c][sym] = -1
			if t >= 0 {
				d.next[c][sym] = order[class[t]]
			}
		}
	}
	return d, nil
}

func countClasses(class []int32) int {
	seen := map[int32]bool{}
	for _, c := range class {
		seen[c] = true
	}
	return len(seen)
}

// emitDFA writes the automaton as rules named after prefix, one for each
// state a rule must name (the automaton is acyclic: a rule refers only to
// states written before it), and returns the start's body. A state from
// which only up to n more digits of one class may follow is written as
// that repetition, not as a chain of n rules.
func (c *converter) emitDFA(d *dfa, prefix string) string {
	names := map[int32]string{}
	var ref func(t int32) string
	ref = func(t int32) string {
		if d.isFinal(t) {
			return ""
		}
		if cls, n, ok := d.tail(t); ok {
			if n == 1 {
				return cls + "?"
			}
			return fmt.Sprintf("%s{0,%d}", cls, n)
		}
		if name, ok := names[t]; ok {
			return name
		}
		names[t] = c.addRule(fmt.Sprintf("%s-%d", prefix, len(names)+1), d.body(t, ref))
		return names[t]
	}
	return d.body(0, ref)
}

// isFinal: an accepting state with nowhere to go.
func (d *dfa) isFinal(s int32) bool {
	for _, t := range d.next[s] {
		if t >= 0 {
			return false
		}
	}
	return d.accept[s]
}

// tail reports whether s accepts and only digits of one class, all to one
// state, may follow it, repeatedly, up to n times.
func (d *dfa) tail(s int32) (string, int, bool) {
	if !d.accept[s] || d.isFinal(s) {
		return "", 0, false
	}
	var digits []byte
	to := int32(-1)
	for sym, t := range d.next[s] {
		if t < 0 {
			continue
		}
		ch := symOf(sym)
		if ch < '0' || ch > '9' || to >= 0 && t != to {
			return "", 0, false
		}
		to = t
		digits = append(digits, ch)
	}
	cls := digitClass(digits)
	if d.isFinal(to) {
		return cls, 1, true
	}
	if c2, n, ok := d.tail(to); ok && c2 == cls {
		return cls, n + 1, true
	}
	return "", 0, false
}

// body is state s's rule: its characters grouped by the state they lead
// to, optional as a whole where s accepts.
func (d *dfa) body(s int32, ref func(int32) string) string {
	var alts []string
	var targets []int32
	for _, t := range d.next[s] {
		if t >= 0 && !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	for _, t := range targets {
		var digits []byte
		var alt []string
		for sym, u := range d.next[s] {
			if u != t {
				continue
			}
			if ch := symOf(sym); ch >= '0' && ch <= '9' {
				digits = append(digits, ch)
			} else {
				alt = append(alt, `"`+string(ch)+`"`)
			}
		}
		if len(digits) > 0 {
			alt = append(alt, digitClass(digits))
		}
		chars := strings.Join(alt, " | ")
		if len(alt) > 1 {
			chars = "(" + chars + ")"
		}
		if r := ref(t); r != "" {
			chars += " " + r
		}
		alts = append(alts, chars)
	}
	b := strings.Join(alts, " | ")
	if d.accept[s] {
		return "(" + b + ")?"
	}
	if len(alts) > 1 {
		return "(" + b + ")"
	}
	return b
}

// digitClass is a character class of sorted digits, runs as ranges.
func digitClass(ds []byte) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < len(ds); {
		j := i
		for j+1 < len(ds) && ds[j+1] == ds[j]+1 {
			j++
		}
		b.WriteByte(ds[i])
		if j > i+1 {
			b.WriteByte('-')
		}
		if j > i {
			b.WriteByte(ds[j])
		}
		i = j + 1
	}
	b.WriteByte(']')
	return b.String()
}
