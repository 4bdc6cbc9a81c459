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

// Cached returns every indexed block of the main group: those in use
// first, then the free list's from the head (evicted first) to the tail,
// so that adopting them in this order rebuilds the same eviction order.
func (p *Pool) Cached() []CachedBlock { return p.cachedBlocks() }

// Adopt indexes h on a free block that holds nothing reusable and puts it
// at the tail of the free list, cached: the caller then writes the block's
// contents. It reports false when prefix caching is off, h is already
// indexed, or no such block is free (adopting never evicts).
func (p *Pool) Adopt(h Hash) (int, bool) {
	if !p.caching {
		return 0, false
	}
	return p.adopt(h)
}
