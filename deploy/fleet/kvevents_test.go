package fleet

import (
	"slices"
	"testing"

	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents/engineadapter"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/batchd/batchd/kvcache"
	bkv "github.com/batchd/batchd/kvevents"
)

// TestKVEventsDecodeWithLlmd: what batchd publishes decodes with llm-d's
// own vLLM adapter (llm-d-kv-cache v0.9.0, its ParseMessage): the topic's
// pod and model, and every event's kind, hashes, parent, tokens, block
// size and tier. batchd's batches once had two fields where vLLM sends
// three, and llm-d rejected every one of them.
func TestKVEventsDecodeWithLlmd(t *testing.T) {
	h0 := kvcache.ChainHash(kvcache.Hash{}, []int{1, 2, 3, 4})
	h1 := kvcache.ChainHash(h0, []int{5, 6, 7, 8})
	h2 := kvcache.ChainHash(h1, []int{9, 10, 11, 12})
	payload, err := bkv.Encode(1733250000.5, []kvcache.Event{
		{Kind: kvcache.Cleared},
		{Kind: kvcache.Stored, Hashes: []kvcache.Hash{h0}, Tokens: []int{1, 2, 3, 4}},
		{Kind: kvcache.Stored, Hashes: []kvcache.Hash{h1, h2}, Parent: h0, HasParent: true, Tokens: []int{5, 6, 7, 8, 9, 10, 11, 12}},
		{Kind: kvcache.Removed, Hashes: []kvcache.Hash{h0, h1}},
	}, "CPU")
	if err != nil {
		t.Fatal(err)
	}
	topic := bkv.TopicName("batchd-0", "qwen2.5-7b")
	pod, model, batch, err := engineadapter.NewVLLMAdapter().ParseMessage(&kvevents.RawMessage{Topic: topic, Sequence: 7, Payload: payload})
	if err != nil {
		t.Fatalf("llm-d's adapter: %v", err)
	}
	if pod != "batchd-0" || model != "qwen2.5-7b" || batch.Timestamp != 1733250000.5 || len(batch.Events) != 4 {
		t.Fatalf("pod %q, model %q, ts %v, %d events", pod, model, batch.Timestamp, len(batch.Events))
	}
	if _, ok := batch.Events[0].(*kvevents.AllBlocksClearedEvent); !ok {
		t.Errorf("event 0: %T", batch.Events[0])
	}
	first, ok1 := batch.Events[1].(*kvevents.BlockStoredEvent)
	second, ok2 := batch.Events[2].(*kvevents.BlockStoredEvent)
	if !ok1 || !ok2 {
		t.Fatalf("events 1, 2: %T, %T", batch.Events[1], batch.Events[2])
	}
	if !slices.Equal(first.BlockHashes, []uint64{bkv.HashID(h0)}) || first.ParentHash != 0 || first.BlockSize != 4 ||
		!slices.Equal(first.Tokens, []uint32{1, 2, 3, 4}) || first.DeviceTier != "CPU" {
		t.Errorf("first stored: %+v", first)
	}
	if !slices.Equal(second.BlockHashes, []uint64{bkv.HashID(h1), bkv.HashID(h2)}) || second.ParentHash != bkv.HashID(h0) ||
		second.BlockSize != 4 || len(second.Tokens) != 8 {
		t.Errorf("second stored: %+v", second)
	}
	rm, ok := batch.Events[3].(*kvevents.BlockRemovedEvent)
	if !ok || !slices.Equal(rm.BlockHashes, []uint64{bkv.HashID(h0), bkv.HashID(h1)}) {
		t.Errorf("removed: %T %+v", batch.Events[3], rm)
	}
	// The form batchd sent before, [ts, events], is what llm-d refuses.
	var whole []msgpack.RawMessage
	if err := msgpack.Unmarshal(payload, &whole); err != nil || len(whole) != 3 {
		t.Fatalf("batch of %d fields (%v)", len(whole), err)
	}
	old, _ := msgpack.Marshal([]any{whole[0], whole[1]})
	if _, _, _, err := engineadapter.NewVLLMAdapter().ParseMessage(&kvevents.RawMessage{Topic: topic, Payload: old}); err == nil {
		t.Error("llm-d decoded a two-field batch: this test no longer shows the defect it guards")
	}
}
