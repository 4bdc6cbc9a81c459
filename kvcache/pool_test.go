package kvcache

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func newPool(t *testing.T, n int, caching bool) *Pool {
	t.Helper()
	p, err := New(Options{NumBlocks: n, BlockSize: 16, PrefixCaching: caching})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func seqTokens(base, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = base + i
	}
	return out
}

func mustCheck(t *testing.T, p *Pool) {
	t.Helper()
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{NumBlocks: 0}, {NumBlocks: 4, BlockSize: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

func TestAllocateExactIDsAndFreeOrder(t *testing.T) {
	p := newPool(t, 11, false)
	if err := p.Allocate(1, nil, 40); err != nil { // 3 blocks
		t.Fatal(err)
	}
	if got, want := p.Blocks(1), []int{0, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("seq 1 blocks %v, want %v", got, want)
	}
	if err := p.Allocate(2, nil, 17); err != nil { // 2 blocks
		t.Fatal(err)
	}
	if got, want := p.Blocks(2), []int{3, 4}; !slices.Equal(got, want) {
		t.Fatalf("seq 2 blocks %v, want %v", got, want)
	}
	// Growing by one token inside the last block takes nothing; crossing takes one.
	if err := p.Allocate(1, nil, 48); err != nil {
		t.Fatal(err)
	}
	if err := p.Allocate(1, nil, 49); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Blocks(1), []int{0, 1, 2, 5}; !slices.Equal(got, want) {
		t.Fatalf("seq 1 blocks %v, want %v", got, want)
	}
	if got, want := p.FreeList(), []int{6, 7, 8, 9, 10}; !slices.Equal(got, want) {
		t.Fatalf("free list %v, want %v", got, want)
	}
	// Unhashed blocks return to the head, walked in reverse: 0 ends up first.
	p.Free(1)
	if got, want := p.FreeList(), []int{0, 1, 2, 5, 6, 7, 8, 9, 10}; !slices.Equal(got, want) {
		t.Fatalf("free list after free %v, want %v", got, want)
	}
	mustCheck(t, p)
	u := p.Usage()
	if u.Used != 2 || u.Free != 9 || u.Cached != 0 || u.Total != 11 {
		t.Fatalf("usage %+v", u)
	}
}

func TestNoBlocksIsTypedAndAtomic(t *testing.T) {
	p := newPool(t, 4, false)
	if err := p.Allocate(1, nil, 48); err != nil {
		t.Fatal(err)
	}
	err := p.Allocate(2, nil, 33)
	var nb *ErrNoBlocks
	if !errors.As(err, &nb) || nb.Need != 3 || nb.Free != 1 {
		t.Fatalf("got %v, want ErrNoBlocks{Need:3 Free:1}", err)
	}
	if p.Has(2) || p.Available() != 1 {
		t.Fatalf("failed allocation changed the pool: has=%v available=%d", p.Has(2), p.Available())
	}
	mustCheck(t, p)
}

func TestPrefixSharingAndLRUEviction(t *testing.T) {
	p := newPool(t, 11, true)
	prompt := seqTokens(100, 40) // 2 full blocks + 8 tokens
	if blocks, n := p.Lookup(Hash{}, prompt); len(blocks) != 0 || n != 0 {
		t.Fatalf("empty cache hit %v %d", blocks, n)
	}
	if err := p.Allocate(1, nil, len(prompt)); err != nil {
		t.Fatal(err)
	}
	p.Commit(1, Hash{}, prompt)
	// Same prefix: the two full blocks are shared, the tail is new.
	blocks, n := p.Lookup(Hash{}, prompt)
	if !slices.Equal(blocks, []int{0, 1}) || n != 32 {
		t.Fatalf("lookup %v %d, want [0 1] 32", blocks, n)
	}
	if err := p.Allocate(2, blocks, len(prompt)); err != nil {
		t.Fatal(err)
	}
	if got := p.Blocks(2); !slices.Equal(got, []int{0, 1, 3}) {
		t.Fatalf("seq 2 blocks %v", got)
	}
	mustCheck(t, p)
	p.Free(1)
	p.Free(2)
	// Blocks 2 and 3 held partial tails: unhashed, to the head (3 freed last).
	// 1 then 0 go to the tail (reverse order), so tails are evicted first.
	if got, want := p.FreeList(), []int{3, 2, 4, 5, 6, 7, 8, 9, 10, 1, 0}; !slices.Equal(got, want) {
		t.Fatalf("free list %v, want %v", got, want)
	}
	if u := p.Usage(); u.Cached != 2 || u.Free != 9 || u.Used != 0 {
		t.Fatalf("usage %+v", u)
	}
	// A cached-free block is revived by reference, without counting as new.
	blocks, _ = p.Lookup(Hash{}, prompt[:32])
	if err := p.Allocate(3, blocks, 32); err != nil {
		t.Fatal(err)
	}
	if got := p.Blocks(3); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("revived blocks %v", got)
	}
	p.Free(3)
	// Filling the pool evicts cached blocks last, and in LRU order (1 before 0).
	if err := p.Allocate(4, nil, 16*10); err != nil {
		t.Fatal(err)
	}
	if got := p.Blocks(4); !slices.Equal(got, []int{3, 2, 4, 5, 6, 7, 8, 9, 10, 1}) {
		t.Fatalf("seq 4 blocks %v", got)
	}
	if blocks, n := p.Lookup(Hash{}, prompt); !slices.Equal(blocks, []int{0}) || n != 16 {
		t.Fatalf("after evicting block 1: lookup %v %d", blocks, n)
	}
	p.Record(40, 32)
	u := p.Usage()
	if u.Evictions != 1 || u.Hits != 32 || u.Queries != 40 {
		t.Fatalf("counters %+v", u)
	}
	mustCheck(t, p)
}

func TestCommitIsWriteOnceAndSkipsDuplicates(t *testing.T) {
	p := newPool(t, 8, true)
	prompt := seqTokens(7, 32)
	for seq := SeqID(1); seq <= 2; seq++ { // both compute the same blocks privately
		if err := p.Allocate(seq, nil, 32); err != nil {
			t.Fatal(err)
		}
	}
	p.Commit(1, Hash{}, prompt)
	p.Commit(2, Hash{}, prompt)
	p.Commit(1, Hash{}, append(prompt, 1, 2, 3)) // partial block: nothing new
	if blocks, _ := p.Lookup(Hash{}, prompt); !slices.Equal(blocks, []int{0, 1}) {
		t.Fatalf("index points at %v, want seq 1's blocks", blocks)
	}
	p.Free(2)
	if u := p.Usage(); u.Cached != 0 || u.Free != 6 {
		t.Fatalf("duplicate blocks must come back as plain free: %+v", u)
	}
	mustCheck(t, p)
}

func TestResetCache(t *testing.T) {
	p := newPool(t, 4, true)
	prompt := seqTokens(0, 32)
	_ = p.Allocate(1, nil, 32)
	p.Commit(1, Hash{}, prompt)
	_ = p.Allocate(2, nil, 16)
	p.Commit(2, Hash{}, seqTokens(500, 16))
	p.Free(1)
	p.ResetCache()
	if blocks, _ := p.Lookup(Hash{}, prompt); len(blocks) != 0 {
		t.Fatalf("cache survived reset: %v", blocks)
	}
	if blocks, _ := p.Lookup(Hash{}, seqTokens(500, 16)); len(blocks) != 1 {
		t.Fatal("reset dropped a block in use")
	}
	mustCheck(t, p)
}

// TestRandomOperations drives the pool with random allocate, grow, commit,
// free and lookup calls and checks the invariants after every one.
func TestRandomOperations(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 99))
		p, err := New(Options{NumBlocks: 1 + rng.IntN(40), BlockSize: 1 + rng.IntN(8), PrefixCaching: seed%4 != 0})
		if err != nil {
			t.Fatal(err)
		}
		prompts := make([][]int, 6) // few prompts sharing prefixes, to make hits likely
		for i := range prompts {
			prompts[i] = seqTokens(0, 64)
			for j := 20 + 8*i; j < 64; j++ {
				prompts[i][j] = 1000*i + j
			}
		}
		lens := map[SeqID]int{}
		toks := map[SeqID][]int{}
		for op := range 2000 {
			seq := SeqID(rng.IntN(12))
			switch rng.IntN(4) {
			case 0: // admit
				if p.Has(seq) {
					continue
				}
				pr := prompts[rng.IntN(len(prompts))][:1+rng.IntN(64)]
				blocks, n := p.Lookup(Hash{}, pr[:len(pr)-1])
				if err := p.Allocate(seq, blocks, len(pr)); err != nil {
					var nb *ErrNoBlocks
					if !errors.As(err, &nb) {
						t.Fatal(err)
					}
					if p.Has(seq) {
						t.Fatalf("seed %d op %d: failed admit left a table", seed, op)
					}
					continue
				}
				if n > len(pr) {
					t.Fatalf("lookup covered %d of %d tokens", n, len(pr))
				}
				lens[seq], toks[seq] = len(pr), pr
				p.Commit(seq, Hash{}, pr)
			case 1: // grow by a decode token
				if !p.Has(seq) {
					continue
				}
				if err := p.Allocate(seq, nil, lens[seq]+1); err == nil {
					lens[seq]++
					toks[seq] = append(toks[seq][:lens[seq]-1:lens[seq]-1], rng.IntN(50))
					p.Commit(seq, Hash{}, toks[seq])
				}
			case 2:
				p.Free(seq)
				delete(lens, seq)
			case 3:
				p.Lookup(Hash{}, prompts[rng.IntN(len(prompts))])
			}
			if err := p.Check(); err != nil {
				t.Fatalf("seed %d op %d: %v", seed, op, err)
			}
			for s, n := range lens {
				if got := len(p.Blocks(s)); got != p.BlocksFor(n) {
					t.Fatalf("seed %d op %d: seq %d has %d blocks for %d tokens", seed, op, s, got, n)
				}
			}
		}
		for s := range lens {
			p.Free(s)
		}
		if u := p.Usage(); u.Used != 0 || u.Free+u.Cached != u.Total {
			t.Fatalf("seed %d: blocks leaked: %+v", seed, u)
		}
	}
}

// TestSaltedChains: blocks committed under a salt match lookups under the
// same salt only; the shared cache and other salts miss them, and the same
// tokens under two salts are two entries.
func TestSaltedChains(t *testing.T) {
	p := newPool(t, 16, true)
	prompt := seqTokens(7, 33)
	a, b := Salt("user:1000"), Salt("user:1001")
	if a == (Hash{}) || a == b || Salt("") != (Hash{}) {
		t.Fatalf("salts %x %x %x", a, b, Salt(""))
	}
	if err := p.Allocate(1, nil, len(prompt)); err != nil {
		t.Fatal(err)
	}
	p.Commit(1, a, prompt)
	for _, c := range []struct {
		name string
		salt Hash
		want int
	}{{"same salt", a, 32}, {"another salt", b, 0}, {"the shared cache", Hash{}, 0}} {
		if _, n := p.Lookup(c.salt, prompt); n != c.want {
			t.Errorf("%s: %d tokens cached, want %d", c.name, n, c.want)
		}
	}
	if err := p.Allocate(2, nil, len(prompt)); err != nil {
		t.Fatal(err)
	}
	p.Commit(2, b, prompt)
	if blocks, n := p.Lookup(b, prompt); n != 32 || slices.Contains(blocks, p.Blocks(1)[0]) {
		t.Errorf("salt b: %v (%d tokens) shares seq 1's blocks %v", blocks, n, p.Blocks(1))
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestRenameAndAdopt: a renamed table keeps its blocks from eviction
// until freed under its new id; Cached lists indexed blocks in use first,
// then in eviction order; adopting them into a fresh pool rebuilds the
// index and that order, never evicting, never twice.
func TestRenameAndAdopt(t *testing.T) {
	p := newPool(t, 4, true)
	a, b := seqTokens(1, 32), seqTokens(100, 16)
	if err := p.Allocate(1, nil, 32); err != nil {
		t.Fatal(err)
	}
	p.Commit(1, Hash{}, a)
	if !p.Rename(1, 1<<62) || p.Rename(1, 7) {
		t.Fatal("rename")
	}
	if err := p.Allocate(2, nil, 16); err != nil {
		t.Fatal(err)
	}
	p.Commit(2, Hash{}, b)
	p.Free(2)
	// Two blocks left on the free list; asking for three must not take the pinned ones.
	if err := p.Allocate(3, nil, 48); err == nil {
		t.Fatal("allocated over a pinned table")
	}
	cached, pinned := p.Cached(), p.Blocks(1<<62)
	if len(cached) != 3 || cached[0].ID != pinned[0] || cached[1].ID != pinned[1] || cached[2].Hash != ChainHash(Hash{}, b) {
		t.Fatalf("cached %v, pinned %v", cached, pinned)
	}
	if _, n := p.Lookup(Hash{}, a); n != 32 {
		t.Fatalf("pinned prefix: %d tokens cached", n)
	}
	q := newPool(t, 4, true)
	for _, c := range cached {
		if _, ok := q.Adopt(c.Hash); !ok {
			t.Fatalf("adopt %x", c.Hash)
		}
	}
	if _, ok := q.Adopt(cached[0].Hash); ok {
		t.Error("adopted a hash twice")
	}
	if _, n := q.Lookup(Hash{}, a); n != 32 {
		t.Errorf("adopted prefix: %d tokens", n)
	}
	if _, n := q.Lookup(Hash{}, b); n != 16 {
		t.Errorf("adopted block b: %d tokens", n)
	}
	if _, ok := q.Adopt(Salt("x")); ok { // the fourth block is free and unhashed: fine
	} else {
		t.Error("adopt onto the last free block")
	}
	if _, ok := q.Adopt(Salt("y")); ok {
		t.Error("adopt evicted a cached block")
	}
	p.Free(1 << 62)
	for _, pool := range []*Pool{p, q} {
		if err := pool.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestShrinkGivesBackTheTail(t *testing.T) {
	p := newPool(t, 11, true)
	toks := seqTokens(0, 20)
	if err := p.Allocate(1, nil, 20+16); err != nil { // 3 blocks: 20 tokens and a 16-token draft
		t.Fatal(err)
	}
	p.Commit(1, Hash{}, toks[:16])
	p.Shrink(1, 21) // one draft token kept: 2 blocks
	if got := p.Blocks(1); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("blocks %v after shrinking to 21 tokens", got)
	}
	if head := p.FreeList()[0]; head != 2 {
		t.Fatalf("free list head %d: the given-back block is taken first", head)
	}
	p.Shrink(1, 1) // never below the committed block
	if got := p.Blocks(1); !slices.Equal(got, []int{0}) {
		t.Fatalf("blocks %v after shrinking to 1 token", got)
	}
	mustCheck(t, p)
}

// TestTouchedFollowsUse: the blocks the pool has ever handed out (whose
// memory the backend has committed) grow only with use: freed blocks that
// hold nothing are taken again first, and blocks never used are taken
// before a cached one is evicted; after the store's memory is released
// (Untouch), the free blocks count as untouched again.
func TestTouchedFollowsUse(t *testing.T) {
	p := newPool(t, 11, true)
	toks := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	if err := p.Allocate(1, nil, 48); err != nil { // 3 blocks
		t.Fatal(err)
	}
	p.Free(1) // nothing committed: they hold nothing
	if err := p.Allocate(2, nil, 32); err != nil {
		t.Fatal(err)
	}
	if u := p.Usage(); u.Touched != 3 {
		t.Fatalf("after reuse: %d touched, want 3 (%v)", u.Touched, p.Blocks(2))
	}
	p.Commit(2, Hash{}, toks(32))
	p.Free(2) // 2 cached blocks, at the tail
	if err := p.Allocate(3, nil, 9*16); err != nil {
		t.Fatal(err)
	}
	if u := p.Usage(); u.Touched != 11 || u.Cached != 2 || u.Evictions != 0 {
		t.Fatalf("9 more blocks: %+v, want every block touched before a cached one is evicted", u)
	}
	p.Free(3)
	p.Untouch()
	if u := p.Usage(); u.Touched != 0 {
		t.Errorf("after Untouch: %d touched", u.Touched)
	}
}
