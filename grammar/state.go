package grammar

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Run-time bounds: a state's stacks, a stack's depth, a grammar's states.
// A grammar that would pass them is too ambiguous (or too deep) to follow
// within a step's budget: the request ends with ErrTooComplex.
const (
	maxStacks     = 512
	maxStackDepth = 2048
	// maxStates and maxPositions (stack entries of all of them) bound the
	// interned states; past them the table starts again (states in use stay
	// valid: they are only no longer shared).
	maxStates    = 8192
	maxPositions = 8 << 20
)

// Grammar is a compiled grammar; it is safe for concurrent use. Its
// states are interned as they are reached and kept for every request that
// uses it.
type Grammar struct {
	syms    []sym     // every alternative's symbols, each ended by symEnd
	alts    [][]int32 // per rule: where its alternatives start in syms
	classes []class
	names   []string
	root    int32

	mu        sync.Mutex
	states    map[string]*state
	positions int // stack entries of the interned states
	initial   *state
	masks     maskCache
}

// state is a set of parse stacks (positions in syms, the top last, each
// top a character class; an empty stack means the grammar may end here).
type state struct {
	g        *Grammar
	stacks   [][]int32
	complete bool // some stack is empty: the text so far is a sentence
	done     bool // every stack is empty: nothing may follow
	// next caches transitions: the state after a character matched by
	// exactly the stacks in the key's bit set (stacks beyond 64 are not
	// cached).
	next  map[uint64]*state
	ascii [128]uint64 // the bit set of the stacks each ASCII character matches
	// byByte caches advance for ASCII characters without the lock (the
	// vocabulary walk's hot path); rejected marks "not allowed".
	byByte [128]atomic.Pointer[state]
	err    error // the transition that built this state broke a bound
	mask   maskEntry
}

// rejected is the byByte entry of a character a state does not allow.
var rejected = &state{}

// build flattens the parser's rules and checks them.
func build(rules [][][]sym, names []string, classes []class, root int32) (*Grammar, error) {
	g := &Grammar{classes: classes, names: names, root: root, states: map[string]*state{}}
	g.alts = make([][]int32, len(rules))
	for r, alts := range rules {
		for _, a := range alts {
			g.alts[r] = append(g.alts[r], int32(len(g.syms)))
			g.syms = append(g.syms, a...)
			g.syms = append(g.syms, sym{kind: symEnd})
		}
	}
	if name, ok := g.leftRecursive(); ok {
		return nil, fmt.Errorf("grammar: rule %q is left-recursive: it can refer to itself before it reads a character", name)
	}
	e := &expander{g: g}
	e.rule([]int32{}, g.root)
	if e.err != nil {
		return nil, e.err
	}
	g.initial = g.intern(e.out)
	if g.initial.err != nil {
		return nil, g.initial.err
	}
	return g, nil
}

// leftRecursive finds a rule that can reach itself through leftmost
// references, past rules that may match nothing.
func (g *Grammar) leftRecursive() (string, bool) {
	n := len(g.alts)
	nullable := g.nullableRules()
	state := make([]uint8, n) // 0 new, 1 on the path, 2 done
	var visit func(r int32) bool
	visit = func(r int32) bool {
		if state[r] == 1 {
			return true
		}
		if state[r] == 2 {
			return false
		}
		state[r] = 1
		for _, a := range g.alts[r] {
			for p := a; g.syms[p].kind == symRef; p++ {
				if visit(g.syms[p].arg) {
					return true
				}
				if !nullable[g.syms[p].arg] {
					break
				}
			}
		}
		state[r] = 2
		return false
	}
	for r := range n {
		if visit(int32(r)) {
			return g.names[r], true
		}
	}
	return "", false
}

// nullableRules finds the rules that may match nothing, by a worklist in
// time linear in the grammar: an alternative of references only waits for
// each of them; the last one found nullable makes its rule nullable. (A
// fixpoint over every rule per pass was quadratic on a chain of optional
// rules, as a schema's optional properties make.)
func (g *Grammar) nullableRules() []bool {
	n := len(g.alts)
	nullable := make([]bool, n)
	type alt struct{ rule, waiting int32 }
	var alts []alt
	users := make([][]int32, n) // per rule: the alternatives that refer to it, once per reference
	var work []int32
	for r := range n {
		for _, a := range g.alts[r] {
			refs := int32(0)
			p := a
			for ; g.syms[p].kind == symRef; p++ {
				refs++
			}
			if g.syms[p].kind != symEnd { // a character: never empty
				continue
			}
			if refs == 0 {
				if !nullable[r] {
					nullable[r] = true
					work = append(work, int32(r))
				}
				continue
			}
			id := int32(len(alts))
			alts = append(alts, alt{rule: int32(r), waiting: refs})
			for q := a; g.syms[q].kind == symRef; q++ {
				users[g.syms[q].arg] = append(users[g.syms[q].arg], id)
			}
		}
	}
	for len(work) > 0 {
		r := work[len(work)-1]
		work = work[:len(work)-1]
		for _, id := range users[r] {
			if alts[id].waiting--; alts[id].waiting == 0 && !nullable[alts[id].rule] {
				nullable[alts[id].rule] = true
				work = append(work, alts[id].rule)
			}
		}
	}
	return nullable
}

// expander collects the stacks that expanding gives, as llama.cpp's
// llama_grammar_advance_stack, and notes a bound passed.
type expander struct {
	g   *Grammar
	out [][]int32
	err error
}

// rule pushes rule's alternatives on stack (the caller's continuation
// already on it) and settles each.
func (e *expander) rule(stack []int32, rule int32) {
	for _, a := range e.g.alts[rule] {
		e.settle(appendPos(stack, a))
	}
}

// settle expands stack until its top is a class (or it is empty).
func (e *expander) settle(stack []int32) {
	if e.err != nil {
		return
	}
	if len(e.out) >= maxStacks {
		e.err = fmt.Errorf("%w: a state of more than %d parse stacks (an ambiguous grammar)", ErrTooComplex, maxStacks)
		return
	}
	if len(stack) > maxStackDepth {
		e.err = fmt.Errorf("%w: nesting deeper than %d", ErrTooComplex, maxStackDepth)
		return
	}
	if len(stack) == 0 {
		e.out = append(e.out, stack)
		return
	}
	top := stack[len(stack)-1]
	switch s := e.g.syms[top]; s.kind {
	case symEnd: // the alternative is done: pop
		e.settle(stack[: len(stack)-1 : len(stack)-1])
	case symRef:
		rest := stack[: len(stack)-1 : len(stack)-1]
		if e.g.syms[top+1].kind != symEnd {
			rest = appendPos(rest, top+1)
		}
		e.rule(rest, s.arg)
	default:
		e.out = append(e.out, stack)
	}
}

func appendPos(stack []int32, p int32) []int32 {
	return append(stack[:len(stack):len(stack)], p)
}

// intern returns the state of a set of stacks, making it once.
func (g *Grammar) intern(stacks [][]int32) *state {
	keys := make([]string, 0, len(stacks))
	byKey := map[string][]int32{}
	for _, st := range stacks {
		b := make([]byte, 4*len(st))
		for i, p := range st {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(p))
		}
		k := string(b)
		if _, dup := byKey[k]; !dup {
			byKey[k] = st
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	key := strings.Join(keys, "|")
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.states[key]; ok {
		return s
	}
	if len(g.states) >= maxStates || g.positions+len(key)/4 > maxPositions {
		g.states, g.positions = map[string]*state{}, 0
	}
	g.positions += len(key) / 4
	s := &state{g: g, next: map[uint64]*state{}, done: true}
	for _, k := range keys {
		st := byKey[k]
		s.stacks = append(s.stacks, st)
		if len(st) == 0 {
			s.complete = true
		} else {
			s.done = false
		}
	}
	for i, st := range s.stacks {
		if i >= 64 || len(st) == 0 {
			continue
		}
		c := &g.classes[g.syms[st[len(st)-1]].arg]
		for r := range rune(128) {
			if c.match(r) {
				s.ascii[r] |= 1 << i
			}
		}
	}
	g.states[key] = s
	return s
}

// matches is the bit set of s's stacks whose top matches r.
func (s *state) matches(r rune) uint64 {
	if r < 128 && len(s.stacks) <= 64 {
		return s.ascii[r]
	}
	var m uint64
	for i, st := range s.stacks {
		if i < 64 && len(st) > 0 && s.g.classes[s.g.syms[st[len(st)-1]].arg].match(r) {
			m |= 1 << i
		}
	}
	return m
}

// advance returns the state after character r (nil: r is not allowed).
func (s *state) advance(r rune) *state {
	if r < 128 {
		if n := s.byByte[r].Load(); n != nil {
			if n == rejected {
				return nil
			}
			return n
		}
		n := s.advanceRune(r)
		if n == nil {
			s.byByte[r].Store(rejected)
		} else {
			s.byByte[r].Store(n)
		}
		return n
	}
	return s.advanceRune(r)
}

func (s *state) advanceRune(r rune) *state {
	if len(s.stacks) > 64 {
		return s.advanceSlow(r)
	}
	m := s.matches(r)
	if m == 0 {
		return nil
	}
	g := s.g
	g.mu.Lock()
	n, ok := s.next[m]
	g.mu.Unlock()
	if ok {
		return n
	}
	e := &expander{g: g}
	for i, st := range s.stacks {
		if m&(1<<i) != 0 {
			e.settle(appendPos(st[:len(st)-1], st[len(st)-1]+1))
		}
	}
	if e.err != nil {
		n = &state{g: g, err: e.err}
	} else {
		n = g.intern(e.out)
	}
	g.mu.Lock()
	s.next[m] = n
	g.mu.Unlock()
	return n
}

func (s *state) advanceSlow(r rune) *state {
	g := s.g
	e := &expander{g: g}
	for _, st := range s.stacks {
		if len(st) > 0 && g.classes[g.syms[st[len(st)-1]].arg].match(r) {
			e.settle(appendPos(st[:len(st)-1], st[len(st)-1]+1))
		}
	}
	switch {
	case e.err != nil:
		return &state{g: g, err: e.err}
	case len(e.out) == 0:
		return nil
	}
	return g.intern(e.out)
}

// partialOK reports whether a character begun with the bytes of p may
// still match the top of some stack.
func (s *state) partialOK(p partial) bool {
	for _, st := range s.stacks {
		if len(st) > 0 && s.g.classes[s.g.syms[st[len(st)-1]].arg].matchPartial(p) {
			return true
		}
	}
	return false
}
