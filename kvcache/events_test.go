package kvcache

import (
	"slices"
	"testing"
)

// replay is a subscriber: the set of hashes the events leave announced.
func replay(t *testing.T, held map[Hash]bool, evs []Event, bs int) {
	t.Helper()
	for _, e := range evs {
		switch e.Kind {
		case Stored:
			if len(e.Tokens) != len(e.Hashes)*bs {
				t.Fatalf("stored %d blocks with %d tokens", len(e.Hashes), len(e.Tokens))
			}
			if e.HasParent && !held[e.Parent] {
				t.Fatalf("stored after a parent never told")
			}
			for _, h := range e.Hashes {
				held[h] = true
			}
		case Removed:
			for _, h := range e.Hashes {
				if !held[h] {
					t.Fatalf("removed a hash never told")
				}
				delete(held, h)
			}
		case Cleared:
			clear(held)
		}
	}
}

func TestEventsFollowTheCache(t *testing.T) {
	p := newPool(t, 6, true)
	p.RecordEvents()
	if ev := p.TakeEvents(); len(ev) != 1 || ev[0].Kind != Cleared {
		t.Fatalf("first events %+v, want one Cleared", ev)
	}
	a := seqTokens(100, 40) // two full blocks and a part
	if err := p.Allocate(1, nil, len(a)); err != nil {
		t.Fatal(err)
	}
	p.Commit(1, Hash{}, a)
	ev := p.TakeEvents()
	if len(ev) != 1 || ev[0].Kind != Stored || len(ev[0].Hashes) != 2 || ev[0].HasParent {
		t.Fatalf("events %+v, want one Stored of two blocks from the root", ev)
	}
	if !slices.Equal(ev[0].Tokens, a[:32]) {
		t.Fatalf("stored tokens %v, want the first 32 of the prompt", ev[0].Tokens)
	}
	h0 := ChainHash(Hash{}, a[:16])
	if ev[0].Hashes[0] != h0 || ev[0].Hashes[1] != ChainHash(h0, a[16:32]) {
		t.Fatal("stored hashes are not the chain's")
	}
	// Growing the sequence tells the next block with its parent.
	if err := p.Allocate(1, nil, 48); err != nil {
		t.Fatal(err)
	}
	a = append(a, seqTokens(500, 8)...)
	p.Commit(1, Hash{}, a)
	ev = p.TakeEvents()
	if len(ev) != 1 || !ev[0].HasParent || ev[0].Parent != ChainHash(h0, a[16:32]) {
		t.Fatalf("events %+v, want one Stored after block 1", ev)
	}
	// A salted chain is never told.
	if err := p.Allocate(2, nil, 16); err != nil {
		t.Fatal(err)
	}
	p.Commit(2, Salt("user:7"), seqTokens(900, 16))
	if ev := p.TakeEvents(); len(ev) != 0 {
		t.Fatalf("salted commit told %+v", ev)
	}
	p.Free(1)
	p.Free(2)
	// A new prompt takes the two free blocks, then evicts seq 1's tail
	// blocks (freed last first); the salted block, freed after, goes
	// silently once its turn comes.
	if err := p.Allocate(3, nil, 16*4); err != nil {
		t.Fatal(err)
	}
	ev = p.TakeEvents()
	h1 := ChainHash(h0, a[16:32])
	if len(ev) != 1 || ev[0].Kind != Removed || !slices.Equal(ev[0].Hashes, []Hash{ChainHash(h1, a[32:48]), h1}) {
		t.Fatalf("events %+v, want one Removed of blocks 2 and 1", ev)
	}
	if err := p.Allocate(4, nil, 16*2); err != nil {
		t.Fatal(err)
	}
	if ev := p.TakeEvents(); len(ev) != 1 || !slices.Equal(ev[0].Hashes, []Hash{h0}) {
		t.Fatalf("events %+v, want block 0 removed and the salted block silent", ev)
	}
	if len(p.Told()) != 0 {
		t.Fatalf("told %d blocks after evicting all", len(p.Told()))
	}
	mustCheck(t, p)
}

func TestEventsRebuildTheCacheUnderChurn(t *testing.T) {
	p := newPool(t, 11, true)
	p.RecordEvents()
	held := map[Hash]bool{}
	for i := range 400 {
		seq := SeqID(i)
		base := (i % 7) * 1000 // prompts share prefixes now and then
		toks := seqTokens(base, 16*(1+i%4)+i%5)
		blocks, n := p.Lookup(Hash{}, toks[:len(toks)-1])
		if err := p.Allocate(seq, blocks, len(toks)); err != nil {
			p.Free(seq - 1)
			p.Free(seq - 2)
			if err := p.Allocate(seq, blocks, len(toks)); err != nil {
				continue
			}
		}
		_ = n
		p.Commit(seq, Hash{}, toks)
		if i%3 == 0 {
			p.Free(seq)
		}
		if i%50 == 49 {
			p.ResetCache()
		}
		replay(t, held, p.TakeEvents(), 16)
		mustCheck(t, p)
	}
	want := map[Hash]bool{}
	for _, c := range p.Cached() {
		want[c.Hash] = true
	}
	if len(held) != len(want) {
		t.Fatalf("subscriber holds %d hashes, the cache %d", len(held), len(want))
	}
	for h := range want {
		if !held[h] {
			t.Fatal("a cached block the subscriber does not hold")
		}
	}
}
