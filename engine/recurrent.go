package engine

import (
	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/kvcache"
)

// recurrentStates are the sequences whose state a backend.Recurrent
// backend holds, each with the position it expects next: each is dropped
// once its sequence no longer runs (finished, cancelled or preempted), and
// a share that does not continue it (a preempted sequence readmitted)
// starts it again, from position 0 or from a kept snapshot.
type recurrentStates struct {
	b    backend.Recurrent // nil: the backend keeps no states
	held map[uint64]int
}

// recurrentBackend returns b as a Recurrent backend whose model has
// recurrent layers, or nil.
func recurrentBackend(b backend.Backend) backend.Recurrent {
	if r, ok := b.(backend.Recurrent); ok && r.Recurrent() {
		return r
	}
	return nil
}

// recurrentOptions are o for a recurrent model: a refused draft would
// leave its tokens in the state.
func recurrentOptions(o Options) Options {
	if o.Speculative.Method != "" {
		if o.Logger != nil {
			o.Logger.Warn("speculative decoding is off: the model has recurrent layers", "method", o.Speculative.Method)
		}
		o.Speculative.Method = ""
	}
	return o
}

// resumable is how many of a cached prefix's blocks a sequence may resume
// after: up to the last whose state the backend keeps.
func resumable(pool *kvcache.Pool, rec backend.Recurrent) func([]int) int {
	return func(blocks []int) int {
		for k := len(blocks); k > 0; k-- {
			if h, ok := pool.BlockHash(blocks[k-1]); ok && rec.HasSnapshot(backend.StateID(h)) {
				return k
			}
		}
		return 0
	}
}

// recurrentShare adds to in what a recurrent backend needs of the share:
// where to start the state from, and which states to keep (at the prompt's
// last block boundaries, kept; at the share's last boundary, rolling,
// where generated blocks are shared too).
func (e *Engine) recurrentShare(in *backend.SeqInput, rs *reqState, start, n int) {
	if e.rstates.b == nil {
		return
	}
	id := rs.seq.ID
	if want, ok := e.rstates.held[id]; !ok || want != start {
		if ok {
			e.rstates.b.DropState(id)
		}
		if start > 0 {
			key := backend.StateID(e.chainHash(rs, start))
			in.Restore = &key
		}
	}
	e.rstates.held[id] = start + n
	bs := e.pool.BlockSize()
	add := func(at int, rolling bool) {
		if at <= start || at > start+n || at == 0 {
			return
		}
		for _, k := range in.Snapshots {
			if k.At == at {
				return
			}
		}
		in.Snapshots = append(in.Snapshots, backend.StateKey{At: at, Key: backend.StateID(e.chainHash(rs, at)), Rolling: rolling})
	}
	p := rs.seq.PromptLen
	add((p-1)/bs*bs, false)
	add(p/bs*bs, false)
	if !e.byRole { // generated blocks are shared only where both roles compute alike
		add((start+n)/bs*bs, true)
	}
}

// chainHash is the prefix-cache hash of the block that ends at position
// at (a multiple of the block size), as the pool chains it.
func (e *Engine) chainHash(rs *reqState, at int) kvcache.Hash {
	bs := e.pool.BlockSize()
	for len(rs.chain) < at/bs {
		i := len(rs.chain)
		parent := rs.seq.Salt
		if i > 0 {
			parent = rs.chain[i-1]
		}
		rs.chain = append(rs.chain, kvcache.ChainHash(parent, rs.seq.Tokens[i*bs:(i+1)*bs]))
	}
	return rs.chain[at/bs-1]
}

// dropStates frees the states of sequences that no longer run.
func (e *Engine) dropStates() {
	if e.rstates.b == nil {
		return
	}
	for id := range e.rstates.held {
		if rs := e.states[id]; rs == nil || rs.seq == nil || rs.seq.Status != sched.SeqRunning {
			e.rstates.b.DropState(id)
			delete(e.rstates.held, id)
		}
	}
}
