package kvcache

import (
	"errors"
	"fmt"
)

// Check verifies the pool's invariants and returns every violation joined.
// It walks the whole pool; tests and debug builds call it at step boundaries.
func (p *Pool) Check() error {
	var errs []error
	refs := make([]int32, p.NumBlocks())
	for seq, t := range p.seqs {
		seen := make(map[int]bool, len(t.blocks))
		for _, id := range t.blocks {
			if id < 0 || id >= p.NumBlocks() {
				errs = append(errs, fmt.Errorf("seq %d holds out-of-range block %d", seq, id))
				continue
			}
			if seen[id] {
				errs = append(errs, fmt.Errorf("seq %d holds block %d twice", seq, id))
			}
			seen[id] = true
			refs[id]++
		}
	}
	listed := 0
	cached := 0
	for i := p.blocks[p.sentinel].next; i != p.sentinel; i = p.blocks[i].next {
		listed++
		if listed > p.NumBlocks() {
			errs = append(errs, errors.New("free list has a cycle"))
			break
		}
		if !p.blocks[i].onList {
			errs = append(errs, fmt.Errorf("block %d linked but not marked on list", i))
		}
		if p.blocks[i].hashed {
			cached++
		}
	}
	if listed != p.onList {
		errs = append(errs, fmt.Errorf("free list length %d, counter %d", listed, p.onList))
	}
	if cached != p.cached {
		errs = append(errs, fmt.Errorf("cached on list %d, counter %d", cached, p.cached))
	}
	used, touched := 0, 0
	for id := range p.NumBlocks() {
		b := &p.blocks[id]
		if b.touched {
			touched++
		}
		if b.ref > 0 && !b.touched {
			errs = append(errs, fmt.Errorf("block %d in use but never counted touched", id))
		}
		if b.ref != refs[id] {
			errs = append(errs, fmt.Errorf("block %d ref %d but %d tables hold it", id, b.ref, refs[id]))
		}
		if (b.ref == 0) != b.onList {
			errs = append(errs, fmt.Errorf("block %d ref %d, on free list %v", id, b.ref, b.onList))
		}
		if b.ref > 0 {
			used++
		}
		if b.told && !b.hashed {
			errs = append(errs, fmt.Errorf("block %d told to subscribers but not indexed", id))
		}
		if b.hashed {
			if got, ok := p.index[b.hash]; !ok || got != id {
				errs = append(errs, fmt.Errorf("block %d hashed but index maps its hash to %d (present %v)", id, got, ok))
			}
		}
	}
	for h, id := range p.index {
		if !p.blocks[id].hashed || p.blocks[id].hash != h {
			errs = append(errs, fmt.Errorf("index entry for block %d does not match the block", id))
		}
	}
	if touched != p.touched {
		errs = append(errs, fmt.Errorf("touched blocks %d, counter %d", touched, p.touched))
	}
	u := p.Usage()
	if u.Free+u.Used+u.Cached != u.Total || used != u.Used {
		errs = append(errs, fmt.Errorf("usage free %d + used %d + cached %d != total %d (counted used %d)",
			u.Free, u.Used, u.Cached, u.Total, used))
	}
	return errors.Join(errs...)
}
