package kvcache

// Keeping blocks past their sequence (pinned prefixes) and carrying the
// prefix cache across restarts (its blocks exported, then adopted by a new
// pool whose backend reloads their contents).

// Rename moves seq's block table to another id, as whole: the blocks keep
// their references, so a table held under an id no sequence uses (a
// pinned prefix) is never evicted until that id is freed. It reports
// false when seq holds no table or to is taken.
func (p *Pool) Rename(seq, to SeqID) bool {
	t := p.seqs[seq]
	if t == nil || p.seqs[to] != nil {
		return false
	}
	delete(p.seqs, seq)
	p.seqs[to] = t
	return true
}

// CachedBlock is one block the prefix cache indexes.
type CachedBlock struct {
	ID   int
	Hash Hash
}

// Cached returns every indexed block: those in use first, then the free
// list's from the head (evicted first) to the tail, so that adopting them
// in this order rebuilds the same eviction order.
func (p *Pool) Cached() []CachedBlock {
	var out []CachedBlock
	for id := range p.NumBlocks() {
		if b := &p.blocks[id]; b.hashed && b.ref > 0 {
			out = append(out, CachedBlock{id, b.hash})
		}
	}
	for i := p.blocks[p.sentinel].next; i != p.sentinel; i = p.blocks[i].next {
		if b := &p.blocks[i]; b.hashed {
			out = append(out, CachedBlock{int(i), b.hash})
		}
	}
	return out
}

// Adopt indexes h on a free block that holds nothing reusable and puts it
// at the tail of the free list, cached: the caller then writes the block's
// contents. It reports false when prefix caching is off, h is already
// indexed, or no such block is free (adopting never evicts).
func (p *Pool) Adopt(h Hash) (int, bool) {
	if !p.caching {
		return 0, false
	}
	if _, dup := p.index[h]; dup {
		return 0, false
	}
	id := int(p.blocks[p.sentinel].next)
	if id == int(p.sentinel) || p.blocks[id].hashed {
		return 0, false
	}
	p.unlink(id)
	b := &p.blocks[id]
	b.hashed, b.hash = true, h
	if !b.touched { // the caller writes it
		b.touched = true
		p.touched++
	}
	p.index[h] = id
	p.pushTail(id)
	return id, true
}
