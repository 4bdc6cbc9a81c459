package kvcache

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func newWindowPool(t *testing.T, n, window, tables int) *Pool {
	t.Helper()
	p, err := New(Options{NumBlocks: n, BlockSize: 16, PrefixCaching: true, Window: window, WindowTables: tables})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWindowSlideReleases(t *testing.T) {
	p := newWindowPool(t, 32, 32, 2) // a window block takes 2 blocks
	toks := seqTokens(0, 100)
	if err := p.Allocate(1, nil, 100); err != nil { // 7 main blocks, 7 window blocks
		t.Fatal(err)
	}
	p.Commit(1, Hash{}, toks)
	p.Slide(1, 100) // a query at 100 sees 69..100: blocks 4.. stay
	mustCheck(t, p)
	for g, tab := range p.Window(1) {
		for i, id := range tab {
			if (i < 4) != (id == -1) {
				t.Fatalf("window table %d %v: want blocks 0..3 released", g, tab)
			}
		}
	}
	u := p.Usage()
	if u.Used != 7+3*2 || u.WindowUsed != 3*2 || u.WindowCached != 4*2 || u.Cached != 8 {
		t.Fatalf("usage %+v: want 7 main blocks and 3 window blocks (6) used, 4 window blocks (8) cached", u)
	}
	// Growing takes a window block per new block from the same free list.
	if err := p.Allocate(1, nil, 180); err != nil {
		t.Fatal(err)
	}
	p.Slide(1, 180)
	if u := p.Usage(); u.Used != 12+3*2 {
		t.Fatalf("usage %+v: want 12 main blocks and 3 window blocks", u)
	}
	if err := p.Allocate(1, nil, 292); err == nil { // 7 more main blocks and 7 window blocks: 21 of 14
		t.Fatal("the pool gave more blocks than it has")
	} else if nb := (*ErrNoBlocks)(nil); !errors.As(err, &nb) || nb.Need != 21 {
		t.Fatalf("error %v, want *ErrNoBlocks for 21 blocks", err)
	}
	mustCheck(t, p)
	p.Free(1)
	mustCheck(t, p)
	if u := p.Usage(); u.Used != 0 || u.WindowUsed != 0 {
		t.Fatalf("blocks leaked: %+v", u)
	}
}

func TestWindowNoBlocksIsAtomic(t *testing.T) {
	p := newWindowPool(t, 20, 32, 2)
	before := p.Usage()
	if err := p.Allocate(1, nil, 100); err == nil {
		t.Fatal("21 blocks from 20")
	}
	if p.Has(1) || p.Usage() != before {
		t.Fatal("a failed allocation changed the pool")
	}
	mustCheck(t, p)
}

// TestWindowPrefixHit: a hit needs the main blocks of the whole prefix and
// the window blocks of its last window; once those are evicted the hit
// shortens to the longest prefix whose window is still cached.
func TestWindowPrefixHit(t *testing.T) {
	p := newWindowPool(t, 80, 40, 2) // a query sees 40 positions: 3 or 4 blocks
	toks := seqTokens(0, 160)        // 10 blocks
	if err := p.Allocate(1, nil, 160); err != nil {
		t.Fatal(err)
	}
	p.Commit(1, Hash{}, toks)
	p.Slide(1, 160)
	p.Free(1)
	mustCheck(t, p)
	blocks, n := p.Lookup(Hash{}, toks)
	if n != 160 {
		t.Fatalf("hit %d tokens, want all 160 (its window is cached)", n)
	}
	if err := p.Allocate(2, blocks, 161); err != nil {
		t.Fatal(err)
	}
	w := p.Window(2)[1]
	if lo := p.firstSeen(160); w[lo-1] != -1 || w[lo] < 0 || w[9] < 0 || w[10] < 0 {
		t.Fatalf("window table %v after a hit of 10 blocks (first seen %d)", w, lo)
	}
	mustCheck(t, p)
	p.Free(2)
	// Blocks 8's and 9's window blocks to the head of the free list: the
	// next allocation takes (and so evicts) them, and the hit shortens to
	// 8 blocks, whose window (blocks 5..7) is still cached.
	for _, i := range []int{8, 9} {
		for _, id := range p.wb[p.windex[p.blocks[blocks[i]].hash]].pages {
			p.unlink(id)
			p.pushHead(id)
		}
	}
	if err := p.Allocate(3, nil, 32); err != nil {
		t.Fatal(err)
	}
	if _, n := p.Lookup(Hash{}, toks); n != 8*16 {
		t.Fatalf("hit %d tokens, want 128 (blocks 8 and 9's window blocks evicted)", n)
	}
	if got := p.Usable(blocks[:9]); got != 8 {
		t.Fatalf("Usable(9 blocks) = %d, want 8", got)
	}
	if err := p.Allocate(4, blocks[:9], 150); err == nil || p.Has(4) {
		t.Fatalf("allocated a prefix without its window's blocks (%v)", err)
	}
	mustCheck(t, p)
}

// TestWindowRandomOperations drives a windowed pool at random and checks,
// after every call, that each sequence's tables hold what it wrote: every
// main block of its full blocks and every window block a query at its next
// position sees carry the chain hash of that block's tokens.
func TestWindowRandomOperations(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		bs := 1 + rng.IntN(8)
		window := 1 + rng.IntN(40)
		p, err := New(Options{NumBlocks: 4 + rng.IntN(90), BlockSize: bs, PrefixCaching: true,
			Window: window, WindowTables: 1 + rng.IntN(3)})
		if err != nil {
			t.Fatal(err)
		}
		w := &windowSim{t: t, p: p, rng: rng, held: map[int]content{}, toks: map[SeqID][]int{}}
		for op := range 1500 {
			w.step(rng.IntN(12))
			if err := p.Check(); err != nil {
				t.Fatalf("seed %d op %d: %v", seed, op, err)
			}
			w.verify(seed, op)
		}
		for s := range w.toks {
			p.Free(s)
		}
		if u := p.Usage(); u.Used != 0 || u.WindowUsed != 0 {
			t.Fatalf("seed %d: blocks leaked: %+v", seed, u)
		}
	}
}

// content is what a block holds: a chain hash's tokens in the main group
// (g -1) or in sliding group g.
type content struct {
	g int
	h Hash
}

// windowSim plays the engine: what it "writes" into a block is the chain
// hash of the block's tokens.
type windowSim struct {
	t    *testing.T
	p    *Pool
	rng  *rand.Rand
	held map[int]content // what each block holds
	toks map[SeqID][]int
}

func (w *windowSim) prompt() []int {
	pr := seqTokens(0, 1+w.rng.IntN(90))
	for j := 20 + 10*w.rng.IntN(5); j < len(pr); j++ {
		pr[j] = 7000 + j
	}
	return pr
}

// wrote records seq's writes of its full blocks from block i on.
func (w *windowSim) wrote(seq SeqID, from int) {
	bs, toks := w.p.BlockSize(), w.toks[seq]
	parent := Hash{}
	for i := range len(toks) / bs {
		h := ChainHash(parent, toks[i*bs:(i+1)*bs])
		parent = h
		if i < from {
			continue
		}
		w.held[w.p.Blocks(seq)[i]] = content{-1, h}
		for g, tab := range w.p.Window(seq) {
			if tab[i] >= 0 {
				w.held[tab[i]] = content{g, h}
			}
		}
	}
}

func (w *windowSim) step(op int) {
	p, seq := w.p, SeqID(w.rng.IntN(10))
	switch op % 4 {
	case 0: // admit
		if p.Has(seq) {
			return
		}
		pr := w.prompt()
		blocks, n := p.Lookup(Hash{}, pr[:len(pr)-1])
		if w.rng.IntN(3) == 0 && len(blocks) > 0 { // a caller's shorter resume point
			blocks = blocks[:p.Usable(blocks[:w.rng.IntN(len(blocks))])]
			n = len(blocks) * p.BlockSize()
		}
		if err := p.Allocate(seq, blocks, len(pr)); err != nil {
			if nb := (*ErrNoBlocks)(nil); !errors.As(err, &nb) {
				w.t.Fatal(err)
			}
			return
		}
		w.toks[seq] = pr
		w.wrote(seq, n/p.BlockSize())
		p.Commit(seq, Hash{}, pr)
		p.Slide(seq, len(pr))
	case 1: // decode
		toks, ok := w.toks[seq]
		if !ok || p.Allocate(seq, nil, len(toks)+1) != nil {
			return
		}
		w.toks[seq] = append(toks, w.rng.IntN(30))
		w.wrote(seq, len(toks)/p.BlockSize())
		p.Commit(seq, Hash{}, w.toks[seq])
		p.Slide(seq, len(toks)+1)
	case 2:
		p.Free(seq)
		delete(w.toks, seq)
	case 3:
		p.Lookup(Hash{}, w.prompt())
	}
}

func (w *windowSim) verify(seed uint64, op int) {
	p, bs := w.p, w.p.BlockSize()
	for seq, toks := range w.toks {
		blocks, tabs := p.Blocks(seq), p.Window(seq)
		if len(blocks) != p.BlocksFor(len(toks)) || len(tabs) != p.k {
			w.t.Fatalf("seed %d op %d: seq %d has %d blocks, %d window tables for %d tokens", seed, op, seq, len(blocks), len(tabs), len(toks))
		}
		parent := Hash{}
		for i := range len(toks) / bs {
			h := ChainHash(parent, toks[i*bs:(i+1)*bs])
			parent = h
			if w.held[blocks[i]] != (content{-1, h}) {
				w.t.Fatalf("seed %d op %d: seq %d block %d holds another block's tokens", seed, op, seq, i)
			}
			for g, tab := range tabs {
				switch {
				case i < p.firstSeen(len(toks)) && tab[i] != -1:
					w.t.Fatalf("seed %d op %d: seq %d keeps window block %d that no query sees", seed, op, seq, i)
				case i >= p.firstSeen(len(toks)) && (tab[i] < 0 || w.held[tab[i]] != (content{g, h})):
					w.t.Fatalf("seed %d op %d: seq %d window block %d (table %d, block %d) does not hold its tokens", seed, op, seq, i, g, tab[i])
				}
			}
		}
	}
}
