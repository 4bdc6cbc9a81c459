package kvevents

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/batchd/batchd/kvcache"
)

// Received is one event as a subscriber reads it.
type Received struct {
	Kind      kvcache.EventKind
	Hashes    []uint64
	Parent    *uint64 // Stored: nil when the blocks start a chain
	Tokens    []int
	BlockSize int
	Medium    string
}

// Decode reads a message's payload as llm-d's vLLM adapter reads it:
// array-encoded structs whose field counts must match (vmihailenco's
// decoder refuses any other), hashes as integers. It is the subscriber's
// side, for tests and tools.
func Decode(payload []byte) (ts float64, evs []Received, err error) {
	var batch struct {
		_      struct{} `msgpack:",array"`
		TS     float64
		Events []msgpack.RawMessage
		Rank   *int // data_parallel_rank
	}
	if err := msgpack.Unmarshal(payload, &batch); err != nil {
		return 0, nil, fmt.Errorf("kv events: batch: %w", err)
	}
	for _, raw := range batch.Events {
		var tag []any
		if err := msgpack.Unmarshal(raw, &tag); err != nil || len(tag) == 0 {
			return 0, nil, fmt.Errorf("kv events: event without a tag (%v)", err)
		}
		var ev Received
		switch tag[0] {
		case "BlockStored":
			var st struct {
				_        struct{} `msgpack:",array"`
				Tag      string
				Hashes   []uint64
				Parent   *uint64
				Tokens   []int
				Size     int
				LoraID   *int
				Medium   *string
				LoraName *string
			}
			err = msgpack.Unmarshal(raw, &st)
			ev = Received{Kind: kvcache.Stored, Hashes: st.Hashes, Parent: st.Parent, Tokens: st.Tokens, BlockSize: st.Size}
			if st.Medium != nil {
				ev.Medium = *st.Medium
			}
		case "BlockRemoved":
			var rm struct {
				_      struct{} `msgpack:",array"`
				Tag    string
				Hashes []uint64
				Medium *string
			}
			err = msgpack.Unmarshal(raw, &rm)
			ev = Received{Kind: kvcache.Removed, Hashes: rm.Hashes}
			if rm.Medium != nil {
				ev.Medium = *rm.Medium
			}
		case "AllBlocksCleared":
			ev = Received{Kind: kvcache.Cleared}
		default:
			err = fmt.Errorf("unknown tag %v", tag[0])
		}
		if err != nil {
			return 0, nil, fmt.Errorf("kv events: %v: %w", tag[0], err)
		}
		evs = append(evs, ev)
	}
	return batch.TS, evs, nil
}
