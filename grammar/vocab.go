package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

var errRejected = errors.New("grammar: the token does not fit the grammar")

// Vocab is a vocabulary as the grammar sees it: each token's text, in a
// byte trie (tokens sharing a prefix share its walk). Tokens without text
// (control tokens, and end tokens, which the caller allows by AllowsEnd)
// are never in a mask.
type Vocab struct {
	n int
	// The trie in preorder: node i's byte, the end of its subtree, and the
	// tokens that end at it (ids[first[i]:first[i+1]]). Node 0 is the root.
	b     []byte
	end   []int32
	first []int32
	ids   []int32
}

// NewVocab builds the trie of tokens' texts (tokens[id]; nil or empty for
// a token no grammar takes).
func NewVocab(tokens [][]byte) *Vocab {
	v := &Vocab{n: len(tokens)}
	order := make([]int32, 0, len(tokens))
	for id, t := range tokens {
		if len(t) > 0 {
			order = append(order, int32(id))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := bytes.Compare(tokens[a], tokens[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	v.b, v.end, v.first = []byte{0}, []int32{0}, []int32{0}
	path := []int32{0} // nodes from the root to the last token's end
	var prev []byte
	for _, id := range order {
		t := tokens[id]
		lcp := 0
		for lcp < len(prev) && lcp < len(t) && prev[lcp] == t[lcp] {
			lcp++
		}
		for len(path) > lcp+1 { // close the nodes past the shared prefix
			n := path[len(path)-1]
			v.end[n] = int32(len(v.b))
			path = path[:len(path)-1]
		}
		for _, c := range t[lcp:] {
			path = append(path, int32(len(v.b)))
			v.b = append(v.b, c)
			v.end = append(v.end, 0)
			v.first = append(v.first, int32(len(v.ids)))
		}
		v.ids = append(v.ids, id) // at the last node of the path, which is the newest
		prev = t
	}
	for _, n := range path {
		v.end[n] = int32(len(v.b))
	}
	v.first = append(v.first, int32(len(v.ids)))
	return v
}

// Size is the number of tokens (a mask's length in bits).
func (v *Vocab) Size() int { return v.n }

// maskEntry is a state's cached mask, for one vocabulary.
type maskEntry struct {
	p atomic.Pointer[cachedMask]
}

type cachedMask struct {
	v *Vocab
	m *Mask
}

// Mask is the set of tokens a state allows: a bit set (bit id of word
// id/64), and the ids themselves when there are few (a sparse mask is
// searched by its list, a dense one by its bits).
type Mask struct {
	Bits []uint64
	IDs  []int32 // nil when more than maxListed
}

// maxListed is the most tokens a Mask lists.
const maxListed = 4096

// Has reports whether the mask allows token id.
func (m *Mask) Has(id int) bool { return m.Bits[id/64]&(1<<(id%64)) != 0 }

// maskCache bounds the masks a grammar keeps: a budget of bytes, the
// oldest given up first.
type maskCache struct {
	mu    sync.Mutex
	order []*state
	bytes int
}

const maskBudget = 32 << 20

// maxWalkWork bounds one mask's walk: trie nodes visited times the stacks
// of their states. A whole 150k-token vocabulary under a state of a few
// stacks is a few million; a grammar so ambiguous that it would take
// longer stalls every sequence's step, so it fails instead.
const maxWalkWork = 64 << 20

// Cached returns the mask of m's state if one was built already.
func (v *Vocab) Cached(m *Matcher) (*Mask, bool) {
	if m.p.remain != 0 {
		return nil, false
	}
	c := m.s.mask.p.Load()
	if c == nil || c.v != v {
		return nil, false
	}
	return c.m, true
}

// Allowed returns the tokens the grammar takes next, from a walk of v's
// trie against m's state (or the state's cached mask). The result is
// shared and must not be changed. End tokens are not in it (AllowsEnd).
// ErrTooComplex: the walk would pass its work bound.
func (v *Vocab) Allowed(m *Matcher) (*Mask, error) {
	if c, ok := v.Cached(m); ok {
		return c, nil
	}
	s := m.s
	w := &walker{v: v, bits: make([]uint64, (v.n+63)/64)}
	w.children(0, s, m.p)
	if w.err != nil {
		return nil, w.err
	}
	if w.work > maxWalkWork {
		return nil, fmt.Errorf("%w: the tokens this state allows take too long to find (an ambiguous grammar)", ErrTooComplex)
	}
	mask := &Mask{Bits: w.bits}
	if w.count <= maxListed {
		mask.IDs = make([]int32, 0, w.count)
		for i, word := range w.bits {
			for ; word != 0; word &= word - 1 {
				mask.IDs = append(mask.IDs, int32(i*64+bits.TrailingZeros64(word)))
			}
		}
	}
	if m.p.remain == 0 {
		s.mask.p.Store(&cachedMask{v: v, m: mask})
		s.g.masks.add(s, len(w.bits)*8+len(mask.IDs)*4)
	}
	return mask, nil
}

// walker is one mask's walk and the work it has done.
type walker struct {
	v     *Vocab
	bits  []uint64
	work  int
	count int // tokens allowed
	// err is a state past a bound that some token would reach: the mask
	// would leave that token out for a reason that is not the grammar's,
	// so the walk fails rather than steer the output (or empty the mask).
	err error
}

func (c *maskCache) add(s *state, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order = append(c.order, s)
	c.bytes += n
	for c.bytes > maskBudget && len(c.order) > 1 {
		old := c.order[0]
		c.order = c.order[1:]
		if m := old.mask.p.Swap(nil); m != nil {
			c.bytes -= len(m.m.Bits)*8 + len(m.m.IDs)*4
		}
	}
}

// children marks, below node, every token the state takes: a child whose
// byte the state rejects cuts off its whole subtree.
func (w *walker) children(node int32, s *state, p partial) {
	v := w.v
	for c := node + 1; c < v.end[node]; c = v.end[c] {
		if w.work += len(s.stacks); w.work > maxWalkWork || w.err != nil {
			return
		}
		ns, np := step(s, p, v.b[c])
		if ns == nil {
			continue
		}
		if ns.err != nil {
			w.err = ns.err
			return
		}
		if v.first[c] < v.first[c+1] && (np.remain == 0 || ns.partialOK(np)) {
			for _, id := range v.ids[v.first[c]:v.first[c+1]] {
				w.bits[id/64] |= 1 << (id % 64)
				w.count++
			}
		}
		w.children(c, ns, np)
	}
}
