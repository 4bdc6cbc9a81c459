package kvcache

import (
	"errors"
	"fmt"
)

// group is the pool's blocks (pages, all of one size): their ref counts, an
// O(1) LRU free list and the main blocks' hash index. A window block
// (window.go) is WindowTables of them, listed and evicted one by one.
type group struct {
	blocks    []block
	sentinel  int32
	onList    int // blocks on the free list, cached or not
	cached    int // of those, the hashed ones
	touched   int // blocks ever taken (Usage.Touched)
	index     map[Hash]int
	evictions uint64
	// evict, when set, is told of a hashed block before it loses its hash
	// (the events of the shared chain).
	evict func(id int)
	// dissolve is told when a page of window block w is taken: the rest of
	// w's pages hold nothing reusable any more.
	dissolve func(w int32)
}

func newGroup(n int) group {
	g := group{blocks: make([]block, n+1), sentinel: int32(n), index: make(map[Hash]int)}
	s := &g.blocks[g.sentinel]
	s.prev, s.next = g.sentinel, g.sentinel
	for i := range n {
		g.pushTail(i)
	}
	return g
}

// size is the number of blocks.
func (g *group) size() int { return int(g.sentinel) }

// take pops the head of the free list, evicting its cached contents.
func (g *group) take() int {
	id := int(g.blocks[g.sentinel].next)
	g.unlink(id)
	b := &g.blocks[id]
	if b.hashed {
		g.unhash(id)
		g.evictions++
	}
	if b.wb != 0 {
		w := b.wb - 1
		b.wb = 0
		g.dissolve(w)
	}
	if !b.touched {
		b.touched = true
		g.touched++
	}
	b.ref = 1
	return id
}

// unhash drops id's hash from the index.
func (g *group) unhash(id int) {
	if g.evict != nil {
		g.evict(id)
	}
	b := &g.blocks[id]
	delete(g.index, b.hash)
	b.hashed = false
}

// publish indexes id under h unless it is indexed already or another block
// holds h; it reports whether it did.
func (g *group) publish(id int, h Hash) bool {
	b := &g.blocks[id]
	if b.hashed {
		return false
	}
	if _, dup := g.index[h]; dup {
		return false
	}
	b.hashed, b.hash = true, h
	g.index[h] = id
	return true
}

// ref adds a reference, taking the block off the free list if it was there.
func (g *group) ref(id int) {
	b := &g.blocks[id]
	if b.ref == 0 {
		g.unlink(id)
	}
	b.ref++
}

// unref drops a reference; at the last, the block goes back on the free
// list: at the tail, cached, if it holds something reusable, else at the
// head, to be taken before any cached block.
func (g *group) unref(id int) {
	b := &g.blocks[id]
	if b.ref--; b.ref > 0 {
		return
	}
	if b.hashed {
		g.pushTail(id)
	} else {
		g.pushHead(id)
	}
}

func (g *group) unlink(id int) {
	b := &g.blocks[id]
	g.blocks[b.prev].next = b.next
	g.blocks[b.next].prev = b.prev
	b.onList = false
	g.onList--
	if b.hashed {
		g.cached--
	}
}

func (g *group) pushTail(id int) { g.insertAfter(id, g.blocks[g.sentinel].prev) }

func (g *group) pushHead(id int) { g.insertAfter(id, g.sentinel) }

func (g *group) insertAfter(id int, at int32) {
	b := &g.blocks[id]
	b.prev = at
	b.next = g.blocks[at].next
	g.blocks[b.next].prev = int32(id)
	g.blocks[at].next = int32(id)
	b.onList = true
	g.onList++
	if b.hashed {
		g.cached++
	}
}

// resetCache unindexes every cached-but-unreferenced block.
func (g *group) resetCache() {
	for i := g.blocks[g.sentinel].next; i != g.sentinel; i = g.blocks[i].next {
		if g.blocks[i].hashed {
			g.unhash(int(i))
			g.cached--
		}
	}
}

// untouch counts the free blocks as never taken.
func (g *group) untouch() {
	for i := g.blocks[g.sentinel].next; i != g.sentinel; i = g.blocks[i].next {
		if b := &g.blocks[i]; b.touched {
			b.touched = false
			g.touched--
		}
	}
}

// freeList is the free list's ids from head (taken next) to tail.
func (g *group) freeList() []int {
	out := make([]int, 0, g.onList)
	for i := g.blocks[g.sentinel].next; i != g.sentinel; i = g.blocks[i].next {
		out = append(out, int(i))
	}
	return out
}

// cachedBlocks is every indexed block: those in use first, then the free
// list's from head to tail (adopting them in this order rebuilds it).
func (g *group) cachedBlocks() []CachedBlock {
	var out []CachedBlock
	for id := range g.size() {
		if b := &g.blocks[id]; b.hashed && b.ref > 0 {
			out = append(out, CachedBlock{id, b.hash})
		}
	}
	for i := g.blocks[g.sentinel].next; i != g.sentinel; i = g.blocks[i].next {
		if b := &g.blocks[i]; b.hashed {
			out = append(out, CachedBlock{int(i), b.hash})
		}
	}
	return out
}

// adopt indexes h on a free block that holds nothing reusable, at the tail
// of the free list; false when h is indexed or no such block is free.
func (g *group) adopt(h Hash) (int, bool) {
	if _, dup := g.index[h]; dup {
		return 0, false
	}
	id := int(g.blocks[g.sentinel].next)
	if id == int(g.sentinel) || g.blocks[id].hashed || g.blocks[id].wb != 0 {
		return 0, false
	}
	g.unlink(id)
	b := &g.blocks[id]
	b.hashed, b.hash = true, h
	if !b.touched { // the caller writes it
		b.touched = true
		g.touched++
	}
	g.index[h] = id
	g.pushTail(id)
	return id, true
}

// check verifies the group against refs (how many tables hold each
// block); name prefixes its errors.
func (g *group) check(name string, refs []int32) []error {
	var errs []error
	listed, cached := 0, 0
	for i := g.blocks[g.sentinel].next; i != g.sentinel; i = g.blocks[i].next {
		listed++
		if listed > g.size() {
			errs = append(errs, errors.New(name+"free list has a cycle"))
			break
		}
		if !g.blocks[i].onList {
			errs = append(errs, fmt.Errorf("%sblock %d linked but not marked on list", name, i))
		}
		if g.blocks[i].hashed {
			cached++
		}
	}
	if listed != g.onList {
		errs = append(errs, fmt.Errorf("%sfree list length %d, counter %d", name, listed, g.onList))
	}
	if cached != g.cached {
		errs = append(errs, fmt.Errorf("%scached on list %d, counter %d", name, cached, g.cached))
	}
	touched := 0
	for id := range g.size() {
		b := &g.blocks[id]
		if b.touched {
			touched++
		}
		if b.ref > 0 && !b.touched {
			errs = append(errs, fmt.Errorf("%sblock %d in use but never counted touched", name, id))
		}
		if b.ref != refs[id] {
			errs = append(errs, fmt.Errorf("%sblock %d ref %d but %d tables hold it", name, id, b.ref, refs[id]))
		}
		if (b.ref == 0) != b.onList {
			errs = append(errs, fmt.Errorf("%sblock %d ref %d, on free list %v", name, id, b.ref, b.onList))
		}
		if b.told && !b.hashed {
			errs = append(errs, fmt.Errorf("%sblock %d told to subscribers but not indexed", name, id))
		}
		if b.hashed {
			if got, ok := g.index[b.hash]; !ok || got != id {
				errs = append(errs, fmt.Errorf("%sblock %d hashed but index maps its hash to %d (present %v)", name, id, got, ok))
			}
		}
	}
	for h, id := range g.index {
		if !g.blocks[id].hashed || g.blocks[id].hash != h {
			errs = append(errs, fmt.Errorf("%sindex entry for block %d does not match the block", name, id))
		}
	}
	if touched != g.touched {
		errs = append(errs, fmt.Errorf("%stouched blocks %d, counter %d", name, touched, g.touched))
	}
	return errs
}
