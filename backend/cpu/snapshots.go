package cpu

import (
	"container/list"
	"fmt"
	"unsafe"

	"github.com/batchd/batchd/backend"
)

// Kept recurrent states (backend.SeqInput.Snapshots): a state as it stood
// at a block boundary, so that a later sequence whose cached prefix ends
// there resumes from it instead of recomputing the prefix.

// snapshot is a kept state: per recurrent layer its convolution inputs and
// matrices (as seqState holds them).
type snapshot struct {
	key       backend.StateID
	conv, ssm [][]float32
	// rolling: a sequence's rolling state (owner's), replaced by its next.
	rolling bool
	owner   uint64
}

// snapshotStore keeps snapshots, least recently used out first.
type snapshotStore struct {
	max   int
	lru   *list.List // of *snapshot, most recent first
	byKey map[backend.StateID]*list.Element
}

func newSnapshotStore(max int) snapshotStore {
	return snapshotStore{max: max, lru: list.New(), byKey: map[backend.StateID]*list.Element{}}
}

// pendingSnap is a snapshot a share asked for, filled as its layers run.
type pendingSnap struct {
	at int // positions of the share before it (At - Pos)
	s  *snapshot
}

// HasSnapshot reports whether a state is kept under key.
func (b *Backend) HasSnapshot(key backend.StateID) bool {
	_, ok := b.snaps.byKey[key]
	return ok
}

// Snapshots is how many states are kept.
func (b *Backend) Snapshots() int { return b.snaps.lru.Len() }

// newState is a zero state, or a kept one's copy.
func (b *Backend) newState(from *snapshot) *seqState {
	r := b.c.Recurrent
	st := &seqState{conv: make([][]float32, b.c.Layers), ssm: make([][]float32, b.c.Layers)}
	for l := range b.c.Layers {
		if r.Layer(l) {
			st.conv[l] = make([]float32, (r.ConvKernel-1)*r.ConvChannels())
			st.ssm[l] = make([]float32, r.VHeads*r.VDim()*r.VDim())
			if from != nil {
				copy(st.conv[l], from.conv[l])
				copy(st.ssm[l], from.ssm[l])
			}
		}
	}
	return st
}

// restore starts share i's state from the snapshot it names.
func (b *Backend) restore(i int, s backend.SeqInput) (*seqState, error) {
	e := b.snaps.byKey[*s.Restore]
	if e == nil {
		return nil, fmt.Errorf("%w: sequence %d resumes at position %d from a state no longer kept", backend.ErrBadBatch, i, s.Pos)
	}
	b.snaps.lru.MoveToFront(e)
	return b.newState(e.Value.(*snapshot)), nil
}

// planSnapshots readies the snapshots each share asked for (buffers the
// layers fill); a key already kept is not taken again.
func (b *Backend) planSnapshots(batch *backend.Batch) error {
	ds := &b.delta
	ds.snaps = ds.snaps[:0]
	for i, s := range batch.Seqs {
		var ps []pendingSnap
		for _, k := range s.Snapshots {
			if k.At <= s.Pos || k.At > s.Pos+len(s.Tokens) {
				return fmt.Errorf("%w: sequence %d asks for a state at %d outside its share %d..%d", backend.ErrBadBatch, i, k.At,
					s.Pos, s.Pos+len(s.Tokens))
			}
			if b.snaps.max <= 0 {
				continue
			}
			if e := b.snaps.byKey[k.Key]; e != nil {
				b.snaps.lru.MoveToFront(e)
				continue
			}
			ps = append(ps, pendingSnap{at: k.At - s.Pos, s: b.takeSnapshot(k, s.Seq)})
		}
		ds.snaps = append(ds.snaps, ps)
	}
	return nil
}

// takeSnapshot is the snapshot k will fill: a rolling one takes over its
// sequence's previous rolling one (out of the store, its buffers reused:
// the layers overwrite all of them), others are new.
func (b *Backend) takeSnapshot(k backend.StateKey, seq uint64) *snapshot {
	if k.Rolling {
		st := b.states[seq]
		if e := b.snaps.byKey[st.rolling]; e != nil {
			if old := e.Value.(*snapshot); old.rolling && old.owner == seq {
				b.snaps.drop(e)
				old.key = k.Key
				st.rolling = k.Key
				return old
			}
		}
		st.rolling = k.Key
	}
	fresh := b.newState(nil)
	return &snapshot{key: k.Key, conv: fresh.conv, ssm: fresh.ssm, rolling: k.Rolling, owner: seq}
}

// keepSnapshots stores the step's filled snapshots; of two sequences that
// took the same state in one step (the same prompt), one is kept.
func (b *Backend) keepSnapshots() {
	for _, ps := range b.delta.snaps {
		for _, p := range ps {
			if _, dup := b.snaps.byKey[p.s.key]; dup {
				continue
			}
			b.snaps.byKey[p.s.key] = b.snaps.lru.PushFront(p.s)
			for b.snaps.lru.Len() > b.snaps.max {
				b.snaps.drop(b.snaps.lru.Back())
			}
		}
	}
}

func (s *snapshotStore) drop(e *list.Element) {
	delete(s.byKey, e.Value.(*snapshot).key)
	s.lru.Remove(e)
}

// snapConv copies layer l's convolution state into share si's snapshots
// that stand after t+1 of its tokens.
func (ds *deltaScratch) snapConv(si, t, l int, state []float32) {
	for _, p := range ds.snaps[si] {
		if p.at == t+1 {
			copy(p.s.conv[l], state)
		}
	}
}

// snapHead copies head h's matrix likewise.
func (ds *deltaScratch) snapHead(si, t, l, h int, M []float32) {
	for _, p := range ds.snaps[si] {
		if p.at == t+1 {
			copy(p.s.ssm[l][h*len(M):(h+1)*len(M)], M)
		}
	}
}

var _ backend.SnapshotStore = (*Backend)(nil)

// SnapshotBytes is one kept state's size: per recurrent layer its
// convolution inputs, then its matrices, as float32.
func (b *Backend) SnapshotBytes() int {
	r := b.c.Recurrent
	if !r.On() {
		return 0
	}
	n := 0
	for l := range b.c.Layers {
		if r.Layer(l) {
			n += (r.ConvKernel-1)*r.ConvChannels() + r.VHeads*r.VDim()*r.VDim()
		}
	}
	return 4 * n
}

// KeptStates lists the kept states' keys, least recently used first.
func (b *Backend) KeptStates() []backend.StateID {
	var out []backend.StateID
	for e := b.snaps.lru.Back(); e != nil; e = e.Prev() {
		out = append(out, e.Value.(*snapshot).key)
	}
	return out
}

// ReadSnapshot copies the state kept under key to dst (SnapshotBytes).
func (b *Backend) ReadSnapshot(key backend.StateID, dst []byte) bool {
	e := b.snaps.byKey[key]
	if e == nil {
		return false
	}
	b.snapshotIO(e.Value.(*snapshot), dst, false)
	return true
}

// WriteSnapshot keeps src (as ReadSnapshot wrote it) under key, the most
// recently used, unless a state is kept under key already.
func (b *Backend) WriteSnapshot(key backend.StateID, src []byte) {
	if b.snaps.max <= 0 || b.snaps.byKey[key] != nil {
		return
	}
	fresh := b.newState(nil)
	s := &snapshot{key: key, conv: fresh.conv, ssm: fresh.ssm}
	b.snapshotIO(s, src, true)
	b.snaps.byKey[key] = b.snaps.lru.PushFront(s)
	for b.snaps.lru.Len() > b.snaps.max {
		b.snaps.drop(b.snaps.lru.Back())
	}
}

func (b *Backend) snapshotIO(s *snapshot, buf []byte, write bool) {
	pos := 0
	for l := range b.c.Layers {
		for _, v := range [][]float32{s.conv[l], s.ssm[l]} {
			if len(v) == 0 {
				continue
			}
			mem := unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
			if write {
				copy(mem, buf[pos:pos+len(mem)])
			} else {
				copy(buf[pos:pos+len(mem)], mem)
			}
			pos += len(mem)
		}
	}
}
