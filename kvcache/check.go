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
	wrefs := make([]int32, len(p.wb))
	for seq, t := range p.seqs {
		errs = append(errs, holds(fmt.Sprintf("seq %d", seq), t.blocks, refs)...)
		if p.k > 0 {
			errs = append(errs, p.checkTable(seq, t, wrefs)...)
		}
	}
	if p.k > 0 {
		errs = append(errs, p.checkWindows(wrefs, refs)...)
	}
	errs = append(errs, p.check("", refs)...)
	u := p.Usage()
	if u.Free+u.Used+u.Cached != u.Total || u.Free < 0 {
		errs = append(errs, fmt.Errorf("usage free %d + used %d + cached %d != total %d", u.Free, u.Used, u.Cached, u.Total))
	}
	return errors.Join(errs...)
}

// holds counts a table's blocks into refs and reports ids out of range or
// held twice.
func holds(who string, ids []int, refs []int32) []error {
	var errs []error
	seen := make(map[int]bool, len(ids))
	for i, id := range ids {
		if id < 0 || id >= len(refs) {
			errs = append(errs, fmt.Errorf("%s holds out-of-range block %d at %d", who, id, i))
			continue
		}
		if seen[id] {
			errs = append(errs, fmt.Errorf("%s holds block %d twice", who, id))
		}
		seen[id] = true
		refs[id]++
	}
	return errs
}

// checkTable counts seq's window blocks into wrefs and checks its window
// tables against them: -1 only as a prefix, each entry a block of the
// window block.
func (p *Pool) checkTable(seq SeqID, t *table, wrefs []int32) []error {
	var errs []error
	if len(t.wins) != len(t.blocks) || len(t.tabs) != p.k {
		return []error{fmt.Errorf("seq %d has %d window entries in %d tables for %d blocks", seq, len(t.wins), len(t.tabs), len(t.blocks))}
	}
	for i, w := range t.wins {
		if w < 0 {
			if w != -1 || i > 0 && t.wins[i-1] >= 0 {
				errs = append(errs, fmt.Errorf("seq %d window entry %d is %d", seq, i, w))
			}
			for g := range t.tabs {
				if t.tabs[g][i] != -1 {
					errs = append(errs, fmt.Errorf("seq %d released window entry %d names block %d", seq, i, t.tabs[g][i]))
				}
			}
			continue
		}
		if int(w) >= len(wrefs) {
			errs = append(errs, fmt.Errorf("seq %d window entry %d is record %d of %d", seq, i, w, len(wrefs)))
			continue
		}
		wrefs[w]++
		for g := range t.tabs {
			if len(t.tabs[g]) != len(t.wins) || t.tabs[g][i] != p.wb[w].pages[g] {
				errs = append(errs, fmt.Errorf("seq %d window table %d does not match window block %d", seq, g, w))
				break
			}
		}
	}
	return errs
}

// checkWindows checks the window blocks' records against wrefs (their
// tables' references) and marks their blocks' expected references in refs.
func (p *Pool) checkWindows(wrefs, refs []int32) []error {
	var errs []error
	free := map[int32]bool{}
	for _, w := range p.wfree {
		free[w] = true
	}
	used, cached, indexed := 0, 0, 0
	for w := range p.wb {
		r := &p.wb[w]
		if r.ref != wrefs[w] {
			errs = append(errs, fmt.Errorf("window block %d ref %d but %d tables hold it", w, r.ref, wrefs[w]))
		}
		if free[int32(w)] {
			if r.ref != 0 || r.hashed {
				errs = append(errs, fmt.Errorf("window block %d unused but ref %d, hashed %v", w, r.ref, r.hashed))
			}
			continue
		}
		if r.ref == 0 && !r.hashed {
			errs = append(errs, fmt.Errorf("window block %d neither held nor cached nor free", w))
		}
		if r.hashed {
			indexed++
			if got, ok := p.windex[r.hash]; !ok || got != int32(w) {
				errs = append(errs, fmt.Errorf("window block %d hashed but the index has %d (%v)", w, got, ok))
			}
		}
		if len(r.pages) != p.k {
			errs = append(errs, fmt.Errorf("window block %d has %d blocks, want %d", w, len(r.pages), p.k))
		}
		for _, id := range r.pages {
			b := &p.blocks[id]
			if b.wb != int32(w)+1 || b.hashed || b.onList != (r.ref == 0) {
				errs = append(errs, fmt.Errorf("window block %d's block %d: part of %d, hashed %v, listed %v", w, id, b.wb-1, b.hashed, b.onList))
			}
			if r.ref > 0 {
				refs[id]++
			}
		}
		if r.ref > 0 {
			used += p.k
		} else {
			cached += p.k
		}
	}
	if used != p.wused || cached != p.wcached || indexed != len(p.windex) {
		errs = append(errs, fmt.Errorf("window blocks: %d used, %d cached, %d indexed; counters %d, %d, %d",
			used, cached, indexed, p.wused, p.wcached, len(p.windex)))
	}
	for id := range p.NumBlocks() {
		if w := p.blocks[id].wb - 1; w >= 0 && (int(w) >= len(p.wb) || free[w]) {
			errs = append(errs, fmt.Errorf("block %d part of unused window block %d", id, w))
		}
	}
	return errs
}
