package engine

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/batchd/batchd/backend"
)

// The saved prefix cache's last section: a recurrent model's kept states
// (backend.SnapshotStore), without which its cached blocks could not be
// resumed after a restart. Its geometry is the state's bytes and a count,
// then each state's key and bytes, least recently used first, so that
// keeping them in order rebuilds the order.

// maxSavedStates bounds a file's count before anything is read.
const maxSavedStates = 1 << 16

// keptStates is what the backend keeps, least recently used first (none
// where it keeps no states).
func (e *Engine) keptStates() (backend.SnapshotStore, []backend.StateID) {
	ss, ok := e.backend.(backend.SnapshotStore)
	if !ok || ss.SnapshotBytes() == 0 {
		return nil, nil
	}
	return ss, ss.KeptStates()
}

// writeStates writes the states section.
func writeStates(w io.Writer, ss backend.SnapshotStore, keys []backend.StateID) error {
	size := 0
	if ss != nil {
		size = ss.SnapshotBytes()
	}
	var head []byte
	head = binary.LittleEndian.AppendUint32(head, uint32(size))
	head = binary.LittleEndian.AppendUint32(head, uint32(len(keys)))
	_, err := w.Write(head)
	buf := make([]byte, size)
	for _, k := range keys {
		if err != nil {
			break
		}
		if !ss.ReadSnapshot(k, buf) {
			clear(buf) // gone since it was listed: cannot happen on the loop
		}
		if _, err = w.Write(k[:]); err == nil {
			_, err = w.Write(buf)
		}
	}
	return err
}

// savedState is a state read from the file, kept once its checksum holds.
type savedState struct {
	key   backend.StateID
	bytes []byte
}

// readStates reads the states section; it keeps nothing yet.
func (e *Engine) readStates(r io.Reader) ([]savedState, error) {
	size, err := readU32(r)
	if err != nil {
		return nil, err
	}
	count, err := readU32(r)
	if err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, nil
	}
	ss, _ := e.keptStates()
	if ss == nil || int(size) != ss.SnapshotBytes() || count > maxSavedStates {
		return nil, fmt.Errorf("%d kept states of %d bytes: this backend keeps states of %d", count, size, e.stateBytes())
	}
	out := make([]savedState, count)
	for i := range out {
		out[i].bytes = make([]byte, size)
		if _, err := io.ReadFull(r, out[i].key[:]); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(r, out[i].bytes); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (e *Engine) stateBytes() int {
	if ss, ok := e.backend.(backend.SnapshotStore); ok {
		return ss.SnapshotBytes()
	}
	return 0
}

// keepStates hands the read states to the backend, oldest first.
func (e *Engine) keepStates(states []savedState) {
	if ss, _ := e.keptStates(); ss != nil {
		for _, s := range states {
			ss.WriteSnapshot(s.key, s.bytes)
		}
	}
}
