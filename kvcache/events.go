package kvcache

// The prefix cache's changes as events, for a router outside the process
// that scores replicas by the prefixes they hold (vLLM's KV events, as
// llm-d's indexer reads them). Only the shared chain is told: a salted
// block can match no request but its tenant's, so announcing it would only
// mislead a router, and blocks adopted from a saved cache come without
// their tokens, so they are kept quiet too (a router then under-counts
// this replica's cache, never over-counts it).

// EventKind says what changed.
type EventKind uint8

const (
	// Stored: full blocks became reusable (Hashes, in chain order, after
	// Parent; Tokens are theirs, BlockSize each).
	Stored EventKind = iota + 1
	// Removed: blocks once Stored are no longer reusable (evicted or reset).
	Removed
	// Cleared: everything told before is void (a new pool).
	Cleared
)

// Event is one change of the prefix cache.
type Event struct {
	Kind      EventKind
	Hashes    []Hash
	Parent    Hash // Stored: the block before Hashes[0]
	HasParent bool // false: Hashes[0] starts a chain
	Tokens    []int
}

// RecordEvents makes the pool keep events until TakeEvents; off by default
// (nothing is kept, nothing costs). The first call records Cleared.
func (p *Pool) RecordEvents() {
	if !p.recording {
		p.recording = true
		p.events = append(p.events, Event{Kind: Cleared})
	}
}

// TakeEvents returns the events since the last call, oldest first, and
// forgets them.
func (p *Pool) TakeEvents() []Event {
	ev := p.events
	p.events = nil
	return ev
}

// told records that block id, indexed under h, was stored after parent.
func (p *Pool) told(id int, h, parent Hash, hasParent bool, tokens []int) {
	p.blocks[id].told = true
	if n := len(p.events); n > 0 {
		if last := &p.events[n-1]; last.Kind == Stored && last.Hashes[len(last.Hashes)-1] == parent && hasParent {
			last.Hashes = append(last.Hashes, h)
			last.Tokens = append(last.Tokens, tokens...)
			return
		}
	}
	p.events = append(p.events, Event{Kind: Stored, Hashes: []Hash{h}, Parent: parent, HasParent: hasParent,
		Tokens: append([]int(nil), tokens...)})
}

// untold records that block id no longer holds its told hash.
func (p *Pool) untold(id int) {
	b := &p.blocks[id]
	if !b.told {
		return
	}
	b.told = false
	if n := len(p.events); n > 0 && p.events[n-1].Kind == Removed {
		p.events[n-1].Hashes = append(p.events[n-1].Hashes, b.hash)
		return
	}
	p.events = append(p.events, Event{Kind: Removed, Hashes: []Hash{b.hash}})
}

// Told returns the hashes the events have announced and not withdrawn:
// what a subscriber that saw every event holds for this pool.
func (p *Pool) Told() []Hash {
	var out []Hash
	for id := range p.NumBlocks() {
		if p.blocks[id].told {
			out = append(out, p.blocks[id].hash)
		}
	}
	return out
}
