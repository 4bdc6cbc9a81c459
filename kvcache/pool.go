package kvcache

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// DefaultBlockSize is the number of token slots per block when Options leaves it zero.
const DefaultBlockSize = 16

// Hash identifies the contents of a full block together with everything before
// it: the hash of the parent block's Hash and this block's token ids.
type Hash [16]byte

// SeqID names a sequence that owns a block table.
type SeqID uint64

// ErrNoBlocks reports that an allocation needs more blocks than the pool can give.
type ErrNoBlocks struct {
	Need int // blocks the call needed
	Free int // blocks that could have been handed out (free + evictable cached)
}

func (e *ErrNoBlocks) Error() string {
	return fmt.Sprintf("kvcache: out of blocks: need %d, %d free", e.Need, e.Free)
}

// ErrUnknownSeq reports a call for a sequence that holds no block table.
var ErrUnknownSeq = errors.New("kvcache: unknown sequence")

// Options configures a Pool.
type Options struct {
	NumBlocks     int  // blocks in the pool; required
	BlockSize     int  // token slots per block; default 16
	PrefixCaching bool // index full blocks by hash for reuse across sequences
	// Window, with WindowTables, keeps the sliding-window layers (a query
	// at position p sees keys p-Window+1..p) apart: a block then holds one
	// layer group (the main one: the layers that see every position), and
	// a window block, WindowTables blocks (the sliding layers' groups), is
	// held only while a query of the sequence can see it (window.go).
	Window, WindowTables int
}

// Usage is a snapshot of the pool's occupancy and prefix-cache counters.
type Usage struct {
	Total  int // blocks in the pool
	Free   int // unreferenced, holding nothing reusable
	Used   int // referenced by at least one sequence
	Cached int // unreferenced but indexed: reusable until evicted
	// Touched: blocks ever taken since the pool began (or since its
	// memory was last released): the backend commits a block's memory on
	// first use, so these are what the KV store holds resident. The free
	// list takes blocks that hold nothing before it evicts cached ones,
	// so it grows only with what is used or cached.
	Touched int

	Queries   uint64 // prompt tokens looked up in the prefix cache
	Hits      uint64 // of those, tokens found cached
	Evictions uint64 // cached blocks reused for new contents

	// WindowUsed and WindowCached are the blocks of Used and Cached that
	// window blocks hold.
	WindowUsed, WindowCached int
}

type block struct {
	ref        int32
	hashed     bool
	onList     bool
	told       bool  // announced by a Stored event (events.go)
	touched    bool  // taken at least once (Usage.Touched)
	wb         int32 // 1 + the window block this page is part of; 0: none
	hash       Hash
	prev, next int32 // free list links; the sentinel is index len(blocks)
}

type table struct {
	blocks []int
	hashes []Hash // hashes of blocks[:len(hashes)], all full and committed
	// wins, with a window group, is the window block holding block i's
	// sliding layers (len(wins) == len(blocks)), -1 once no query sees it;
	// tabs are their blocks, a table per sliding group (Window).
	wins []int32
	tabs [][]int
}

// Pool is a fixed pool of KV blocks with ref counts, an LRU free list and a
// prefix-cache index. See the package doc for its invariants.
type Pool struct {
	group // every block, main and window alike
	windows

	blockSize int
	caching   bool
	seqs      map[SeqID]*table

	queries, hits uint64

	recording bool // keep events (events.go)
	events    []Event
}

// New builds a pool whose blocks all start on the free list in id order.
func New(opts Options) (*Pool, error) {
	if opts.NumBlocks <= 0 {
		return nil, fmt.Errorf("kvcache: NumBlocks must be positive, got %d", opts.NumBlocks)
	}
	if opts.BlockSize == 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.BlockSize < 0 {
		return nil, fmt.Errorf("kvcache: BlockSize must be positive, got %d", opts.BlockSize)
	}
	if opts.Window < 0 || opts.WindowTables < 0 || (opts.Window > 0) != (opts.WindowTables > 0) {
		return nil, fmt.Errorf("kvcache: a window of %d tokens over %d tables", opts.Window, opts.WindowTables)
	}
	p := &Pool{
		group:     newGroup(opts.NumBlocks),
		blockSize: opts.BlockSize,
		caching:   opts.PrefixCaching,
		seqs:      make(map[SeqID]*table),
	}
	p.evict, p.dissolve = p.untold, p.dissolveWindow
	p.window, p.k = opts.Window, opts.WindowTables
	p.windex = map[Hash]int32{}
	return p, nil
}

// BlockSize returns the number of token slots per block.
func (p *Pool) BlockSize() int { return p.blockSize }

// NumBlocks returns the number of blocks in the pool (the main group's).
func (p *Pool) NumBlocks() int { return p.size() }

// BlocksFor returns how many blocks hold n tokens.
func (p *Pool) BlocksFor(n int) int { return (n + p.blockSize - 1) / p.blockSize }

// Available returns how many blocks an allocation could take now (free plus evictable).
func (p *Pool) Available() int { return p.onList }

// Usage returns the current occupancy and counters.
func (p *Pool) Usage() Usage {
	u := Usage{
		Total:     p.NumBlocks(),
		Free:      p.onList - p.cached,
		Used:      p.NumBlocks() - p.onList,
		Cached:    p.cached,
		Touched:   p.touched,
		Queries:   p.queries,
		Hits:      p.hits,
		Evictions: p.evictions,
	}
	if p.k > 0 {
		u.Free -= p.wcached
		u.Cached += p.wcached
		u.WindowUsed, u.WindowCached = p.wused, p.wcached
	}
	return u
}

// Blocks returns seq's block table; the slice is owned by the pool and valid
// until the next call that changes seq.
func (p *Pool) Blocks(seq SeqID) []int {
	if t := p.seqs[seq]; t != nil {
		return t.blocks
	}
	return nil
}

// Has reports whether seq holds a block table.
func (p *Pool) Has(seq SeqID) bool { return p.seqs[seq] != nil }

// Lookup returns the longest run of cached full blocks that holds a prefix of
// tokens, and the number of tokens they cover. It changes no ref counts or
// counters: pass the result to Allocate in the same step, and Record it once
// the sequence is admitted. Callers that need logits for the last prompt
// token pass the prompt without it. salt is the chain's root (Salt; the
// zero Hash for the shared cache): only blocks committed under the same
// salt match. With a window group, the run ends where the window group
// still holds what a query there would see (Usable).
func (p *Pool) Lookup(salt Hash, tokens []int) (blocks []int, numTokens int) {
	if !p.caching {
		return nil, 0
	}
	parent := salt
	for start := 0; start+p.blockSize <= len(tokens); start += p.blockSize {
		h := ChainHash(parent, tokens[start:start+p.blockSize])
		id, ok := p.index[h]
		if !ok {
			break
		}
		blocks = append(blocks, id)
		parent = h
	}
	blocks = blocks[:p.Usable(blocks)]
	return blocks, len(blocks) * p.blockSize
}

// BlockHash is the prefix-cache hash block id was published under, if it was.
func (p *Pool) BlockHash(id int) (Hash, bool) {
	if id < 0 || id >= len(p.blocks) || !p.blocks[id].hashed {
		return Hash{}, false
	}
	return p.blocks[id].hash, true
}

// Record counts one prefix-cache query of queried tokens of which hit were cached.
func (p *Pool) Record(queried, hit int) {
	if p.caching {
		p.queries += uint64(queried)
		p.hits += uint64(hit)
	}
}

// Allocate makes seq's block table hold at least numTokens slots. On the
// first call for seq, computed (from Lookup, or a prefix of it that
// Usable passes) becomes the head of its table and each of those blocks
// gains a reference. It either succeeds whole or returns *ErrNoBlocks and
// changes nothing.
func (p *Pool) Allocate(seq SeqID, computed []int, numTokens int) error {
	t := p.seqs[seq]
	have := 0
	revive := 0 // computed blocks that leave the free list when referenced
	if t != nil {
		have = len(t.blocks)
		computed = nil
	} else {
		have = len(computed)
		for _, id := range computed {
			if p.blocks[id].ref == 0 {
				revive++
			}
		}
	}
	need := max(p.BlocksFor(numTokens)-have, 0)
	var wins []int32
	taken := need // blocks taken: a window block too for each new block
	if p.k > 0 {
		var wrevive int
		var err error
		if wins, wrevive, err = p.winComputed(t, computed); err != nil {
			return err
		}
		revive += wrevive
		taken += p.k * need
	}
	if taken+revive > p.onList {
		return &ErrNoBlocks{Need: taken, Free: p.onList - revive}
	}
	if t == nil {
		t = &table{}
		p.seqs[seq] = t
		for _, id := range computed {
			p.ref(id)
			t.blocks = append(t.blocks, id)
			t.hashes = append(t.hashes, p.blocks[id].hash)
		}
	}
	if p.k > 0 { // before anything is taken: taking may evict them
		p.winHit(t, wins)
	}
	for range need {
		t.blocks = append(t.blocks, p.take())
	}
	if p.k > 0 {
		p.winNew(t, need)
	}
	return nil
}

// Commit publishes seq's full blocks among tokens (its token ids so far, all
// computed) to the prefix cache, chained from salt (as Lookup). A block
// whose contents another block already holds stays private; a published
// hash is never rewritten.
func (p *Pool) Commit(seq SeqID, salt Hash, tokens []int) {
	t := p.seqs[seq]
	if t == nil || !p.caching {
		return
	}
	full := min(len(tokens)/p.blockSize, len(t.blocks))
	for i := len(t.hashes); i < full; i++ {
		parent := salt
		if i > 0 {
			parent = t.hashes[i-1]
		}
		h := ChainHash(parent, tokens[i*p.blockSize:(i+1)*p.blockSize])
		t.hashes = append(t.hashes, h)
		if p.k > 0 && t.wins[i] >= 0 {
			p.publishWindow(t.wins[i], h)
		}
		id := t.blocks[i]
		if !p.publish(id, h) {
			continue
		}
		if p.recording && salt == (Hash{}) {
			p.told(id, h, parent, i > 0, tokens[i*p.blockSize:(i+1)*p.blockSize])
		}
	}
}

// Free drops seq's block table. Blocks whose last reference this was go back
// on the free list, tail blocks first so that they are evicted before the
// prefix blocks other prompts are likelier to share; blocks with nothing
// reusable go to the head, to be taken before any cached block.
func (p *Pool) Free(seq SeqID) {
	t := p.seqs[seq]
	if t == nil {
		return
	}
	delete(p.seqs, seq)
	for i := len(t.blocks) - 1; i >= 0; i-- {
		p.unref(t.blocks[i])
		if p.k > 0 && t.wins[i] >= 0 {
			p.unrefWindow(t.wins[i])
		}
	}
}

// ResetCache evicts every cached-but-unreferenced block from the index, as on
// idle sleep when KV memory is released; blocks in use keep their hashes.
func (p *Pool) ResetCache() {
	p.resetCache()
	p.resetWindows()
}

// Untouch counts the free blocks as never taken, once the backend has
// released the KV store's memory (idle sleep): what it commits again
// follows use again.
func (p *Pool) Untouch() {
	p.untouch()
}

// FreeList returns the block ids on the free list from head (taken next) to tail.
func (p *Pool) FreeList() []int { return p.freeList() }

// Salt is the root of a prefix-cache chain of its own (vLLM's
// cache_salt): blocks committed under it match only lookups under it, so
// one tenant cannot learn another's prompt from a cache hit's time to
// first token. "" is the shared cache's root, the zero Hash.
func Salt(s string) Hash {
	var h Hash
	if s == "" {
		return h
	}
	sum := sha256.Sum256(append([]byte("batchd cache salt\x00"), s...))
	copy(h[:], sum[:])
	return h
}

// ChainHash returns the hash of a full block of tokens following parent.
func ChainHash(parent Hash, tokens []int) Hash {
	buf := make([]byte, len(parent)+4*len(tokens))
	copy(buf, parent[:])
	for i, tok := range tokens {
		binary.LittleEndian.PutUint32(buf[len(parent)+4*i:], uint32(tok))
	}
	sum := sha256.Sum256(buf)
	var h Hash
	copy(h[:], sum[:])
	return h
}

// Shrink gives back seq's trailing blocks past those numTokens need (the
// slots of draft tokens a verification rejected), never a committed one.
func (p *Pool) Shrink(seq SeqID, numTokens int) {
	t := p.seqs[seq]
	if t == nil {
		return
	}
	keep := max(p.BlocksFor(numTokens), len(t.hashes))
	for len(t.blocks) > keep {
		i := len(t.blocks) - 1
		p.unref(t.blocks[i])
		t.blocks = t.blocks[:i]
		if p.k > 0 {
			if t.wins[i] >= 0 {
				p.unrefWindow(t.wins[i])
			}
			t.wins = t.wins[:i]
			for g := range t.tabs {
				t.tabs[g] = t.tabs[g][:i]
			}
		}
	}
}
