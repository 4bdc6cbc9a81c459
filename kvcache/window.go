package kvcache

import "errors"

// Window blocks (vLLM's hybrid cache manager): a model whose windowed layers
// see only the last Window positions keeps them apart from the layers that
// see everything. Every block is one layer group's K and V (the backend's
// page), the same size: a sequence's main table holds the main group's
// blocks, and beside it a window block per block, WindowTables blocks (one
// per sliding group), which goes back as soon as the sequence's queries
// have moved past it (Slide). A long sequence thus holds the whole context
// only in the main group, and both kinds draw on one free list, so no split
// is fixed in advance. A released window block keeps its hash, cached, its
// blocks on the free list one by one, until one of them is taken: a prefix
// hit needs the main blocks of the whole prefix and the window blocks of
// its last Window positions (Usable).

// errNotCovered: Allocate was given cached blocks whose last window is no
// longer cached (a prefix Usable did not pass).
var errNotCovered = errors.New("kvcache: cached prefix without its window's blocks")

// windows is a pool's window blocks.
type windows struct {
	window, k int // tokens a query sees; blocks a window block takes
	wb        []wblock
	wfree     []int32 // ids of unused records
	windex    map[Hash]int32
	wused     int // blocks of referenced window blocks
	wcached   int // blocks of cached, unreferenced ones (on the free list)
}

type wblock struct {
	pages  []int // k blocks
	ref    int32
	hashed bool
	hash   Hash
}

// Windowed reports whether the pool has window blocks.
func (p *Pool) Windowed() bool { return p.k > 0 }

// WindowTables is the blocks a window block takes (0 without them).
func (p *Pool) WindowTables() int { return p.k }

// Window returns seq's window tables, one per sliding group: entry i of
// each is a block of block i's window block, or -1 where no query of seq
// sees it any more. Owned by the pool, valid until the next call that
// changes seq; nil without window blocks.
func (p *Pool) Window(seq SeqID) [][]int {
	if t := p.seqs[seq]; t != nil {
		return t.tabs
	}
	return nil
}

// firstSeen is the index of the block holding the oldest position a query
// at pos sees.
func (p *Pool) firstSeen(pos int) int { return max(0, pos-p.window+1) / p.blockSize }

// Usable returns how many of blocks (a cached prefix, from Lookup, or
// shortened) a sequence may resume after: all of them without window
// blocks, else the most whose window is still cached.
func (p *Pool) Usable(blocks []int) int {
	if p.k == 0 {
		return len(blocks)
	}
	held := func(i int) bool {
		h, ok := p.BlockHash(blocks[i])
		if ok {
			_, ok = p.windex[h]
		}
		return ok
	}
	k := len(blocks)
	for k > 0 {
		m := -1 // the last block of k's window that is gone
		for i := k - 1; i >= p.firstSeen(k*p.blockSize); i-- {
			if !held(i) {
				m = i
				break
			}
		}
		if m < 0 {
			return k
		}
		k = m // every longer prefix's window holds m too
	}
	return 0
}

// winComputed finds, for a new table (t nil), the window blocks of
// computed's last window: its window entries (-1 before the window) and
// the blocks they bring back from the free list. It changes nothing.
func (p *Pool) winComputed(t *table, computed []int) ([]int32, int, error) {
	if t != nil {
		return nil, 0, nil
	}
	var wins []int32
	revive := 0
	lo := p.firstSeen(len(computed) * p.blockSize)
	for i, id := range computed {
		if i < lo {
			wins = append(wins, -1)
			continue
		}
		w, ok := p.windex[p.blocks[id].hash]
		if !ok || !p.blocks[id].hashed {
			return nil, 0, errNotCovered
		}
		if p.wb[w].ref == 0 {
			revive += p.k
		}
		wins = append(wins, w)
	}
	return wins, revive, nil
}

// winHit references wins (a new table's, from winComputed) as the head of
// t's window entries.
func (p *Pool) winHit(t *table, wins []int32) {
	if t.tabs == nil {
		t.tabs = make([][]int, p.k)
	}
	for _, w := range wins {
		if w >= 0 {
			p.refWindow(w)
		}
		p.addWindow(t, w)
	}
}

// winNew makes need fresh window blocks for t's new blocks.
func (p *Pool) winNew(t *table, need int) {
	for range need {
		p.addWindow(t, p.newWindow())
	}
}

func (p *Pool) addWindow(t *table, w int32) {
	t.wins = append(t.wins, w)
	for g := range t.tabs {
		id := -1
		if w >= 0 {
			id = p.wb[w].pages[g]
		}
		t.tabs[g] = append(t.tabs[g], id)
	}
}

// newWindow takes k blocks for a window block, referenced once.
func (p *Pool) newWindow() int32 {
	var w int32
	if n := len(p.wfree); n > 0 {
		w, p.wfree = p.wfree[n-1], p.wfree[:n-1]
	} else {
		w = int32(len(p.wb))
		p.wb = append(p.wb, wblock{})
	}
	pages := p.wb[w].pages[:0]
	for range p.k {
		id := p.take()
		p.blocks[id].wb = w + 1
		pages = append(pages, id)
	}
	p.wb[w] = wblock{pages: pages, ref: 1}
	p.wused += p.k
	return w
}

func (p *Pool) refWindow(w int32) {
	r := &p.wb[w]
	if r.ref == 0 {
		for _, id := range r.pages {
			p.unlink(id)
			p.blocks[id].ref = 1
		}
		p.wcached -= p.k
		p.wused += p.k
	}
	r.ref++
}

// unrefWindow drops a reference; at the last, a committed window block's
// blocks go to the free list's tail, cached, and another's to its head,
// free.
func (p *Pool) unrefWindow(w int32) {
	r := &p.wb[w]
	if r.ref--; r.ref > 0 {
		return
	}
	p.wused -= p.k
	for _, id := range r.pages {
		p.blocks[id].ref = 0
		if r.hashed {
			p.pushTail(id)
		} else {
			p.blocks[id].wb = 0
			p.pushHead(id)
		}
	}
	if r.hashed {
		p.wcached += p.k
	} else {
		p.wfree = append(p.wfree, w)
	}
}

// dissolveWindow ends cached window block w, one of whose blocks was just
// taken: its hash goes, and its other blocks, still on the free list,
// move to the head as free.
func (p *Pool) dissolveWindow(w int32) {
	r := &p.wb[w]
	delete(p.windex, r.hash)
	r.hashed = false
	p.wcached -= p.k
	for _, id := range r.pages {
		if p.blocks[id].wb == w+1 {
			p.blocks[id].wb = 0
			p.unlink(id)
			p.pushHead(id)
		}
	}
	p.wfree = append(p.wfree, w)
}

// publishWindow indexes window block w under h, as Commit does a block.
func (p *Pool) publishWindow(w int32, h Hash) {
	r := &p.wb[w]
	if r.hashed {
		return
	}
	if _, dup := p.windex[h]; dup {
		return
	}
	r.hashed, r.hash = true, h
	p.windex[h] = w
}

// resetWindows unindexes every cached, unreferenced window block.
func (p *Pool) resetWindows() {
	for w := range p.wb {
		if r := &p.wb[w]; r.hashed && r.ref == 0 {
			delete(p.windex, r.hash)
			r.hashed = false
			p.wcached -= p.k
			for _, id := range r.pages {
				p.blocks[id].wb = 0
				p.unlink(id)
				p.pushHead(id)
			}
			p.wfree = append(p.wfree, int32(w))
		}
	}
}

// Slide tells the pool that seq's queries are at pos or later from now on:
// the window blocks before the oldest position such a query sees go back
// (cached if committed). Without window blocks it does nothing.
func (p *Pool) Slide(seq SeqID, pos int) {
	t := p.seqs[seq]
	if p.k == 0 || t == nil {
		return
	}
	for i := min(p.firstSeen(pos), len(t.wins)) - 1; i >= 0 && t.wins[i] >= 0; i-- {
		p.unrefWindow(t.wins[i])
		t.wins[i] = -1
		for g := range t.tabs {
			t.tabs[g][i] = -1
		}
	}
}

// CachedWindow is one window block the prefix cache indexes: its blocks,
// one per sliding group.
type CachedWindow struct {
	Blocks []int
	Hash   Hash
}

// WindowCached returns every indexed window block: those in use first,
// then the cached ones from the one whose blocks the free list evicts
// first to the last (adopting them in this order rebuilds it).
func (p *Pool) WindowCached() []CachedWindow {
	var used, free []CachedWindow
	for _, r := range p.wb {
		if r.hashed && r.ref > 0 {
			used = append(used, CachedWindow{append([]int(nil), r.pages...), r.hash})
		}
	}
	for i := p.blocks[p.sentinel].next; i != p.sentinel; i = p.blocks[i].next {
		if w := p.blocks[i].wb - 1; w >= 0 && p.wb[w].pages[0] == int(i) {
			free = append(free, CachedWindow{append([]int(nil), p.wb[w].pages...), p.wb[w].hash})
		}
	}
	return append(used, free...)
}

// AdoptWindow is Adopt for a window block: its k blocks (their contents
// to be written by the caller), or false when prefix caching is off, h is
// indexed, or k blocks that hold nothing reusable are not free.
func (p *Pool) AdoptWindow(h Hash) ([]int, bool) {
	if !p.caching || p.k == 0 {
		return nil, false
	}
	if _, dup := p.windex[h]; dup {
		return nil, false
	}
	n := 0
	for i := p.blocks[p.sentinel].next; i != p.sentinel && n < p.k; i = p.blocks[i].next {
		if b := &p.blocks[i]; b.hashed || b.wb != 0 {
			break
		}
		n++
	}
	if n < p.k {
		return nil, false
	}
	w := p.newWindow()
	p.publishWindow(w, h)
	p.unrefWindow(w)
	return p.wb[w].pages, true
}
