package engine

import (
	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/engine/sched"
)

// recurrentStates are the sequences whose state a backend.Recurrent
// backend holds: each is dropped once its sequence no longer runs
// (finished, cancelled or preempted; a preempted one recomputes from its
// start, where the backend begins a fresh state).
type recurrentStates struct {
	b    backend.Recurrent // nil: the backend keeps no states
	held map[uint64]struct{}
}

// recurrentBackend returns b as a Recurrent backend whose model has
// recurrent layers, or nil.
func recurrentBackend(b backend.Backend) backend.Recurrent {
	if r, ok := b.(backend.Recurrent); ok && r.Recurrent() {
		return r
	}
	return nil
}

// recurrentOptions are o for a recurrent model: a cached prefix's blocks
// hold no state to resume from, and a refused draft would leave its
// tokens in the state.
func recurrentOptions(o Options) Options {
	o.DisablePrefixCaching = true
	if o.Speculative.Method != "" {
		if o.Logger != nil {
			o.Logger.Warn("speculative decoding is off: the model has recurrent layers", "method", o.Speculative.Method)
		}
		o.Speculative.Method = ""
	}
	return o
}

// noteStates records the sequences a batch gives states to.
func (e *Engine) noteStates(batch *backend.Batch) {
	if e.rstates.b == nil {
		return
	}
	for _, s := range batch.Seqs {
		e.rstates.held[s.Seq] = struct{}{}
	}
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
