package kvevents

import (
	"context"
	"encoding/binary"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/batchd/batchd/kvcache"
)

// The shapes llm-d's vLLM adapter decodes (array-encoded structs), so that
// what we send is read the way the router reads it.
type batchMsg struct {
	_                struct{} `msgpack:",array"`
	TS               float64
	Events           []msgpack.RawMessage
	DataParallelRank *int
}

type storedMsg struct {
	_           struct{} `msgpack:",array"`
	Tag         string
	BlockHashes []any
	Parent      any
	TokenIDs    []uint32
	BlockSize   int
	LoraID      *int
	Medium      *string
	LoraName    *string
}

type removedMsg struct {
	_           struct{} `msgpack:",array"`
	Tag         string
	BlockHashes []any
	Medium      *string
}

func TestEncodeReadsAsLlmdReads(t *testing.T) {
	h0 := kvcache.ChainHash(kvcache.Hash{}, []int{1, 2})
	h1 := kvcache.ChainHash(h0, []int{3, 4})
	payload, err := Encode(12.5, []kvcache.Event{
		{Kind: kvcache.Cleared},
		{Kind: kvcache.Stored, Hashes: []kvcache.Hash{h1}, Parent: h0, HasParent: true, Tokens: []int{3, 4}},
		{Kind: kvcache.Removed, Hashes: []kvcache.Hash{h0, h1}},
	}, "CPU")
	if err != nil {
		t.Fatal(err)
	}
	var b batchMsg
	if err := msgpack.Unmarshal(payload, &b); err != nil {
		t.Fatal(err)
	}
	if b.TS != 12.5 || len(b.Events) != 3 {
		t.Fatalf("batch ts %v with %d events", b.TS, len(b.Events))
	}
	var tag []any
	if err := msgpack.Unmarshal(b.Events[0], &tag); err != nil || len(tag) != 1 || tag[0] != "AllBlocksCleared" {
		t.Fatalf("first event %v (%v)", tag, err)
	}
	var st storedMsg
	if err := msgpack.Unmarshal(b.Events[1], &st); err != nil {
		t.Fatal(err)
	}
	if st.Tag != "BlockStored" || len(st.BlockHashes) != 1 || asU64(t, st.BlockHashes[0]) != HashID(h1) ||
		asU64(t, st.Parent) != HashID(h0) || !slices.Equal(st.TokenIDs, []uint32{3, 4}) || st.BlockSize != 2 ||
		st.LoraID != nil || st.Medium == nil || *st.Medium != "CPU" {
		t.Fatalf("stored %+v", st)
	}
	var rm removedMsg
	if err := msgpack.Unmarshal(b.Events[2], &rm); err != nil {
		t.Fatal(err)
	}
	if rm.Tag != "BlockRemoved" || len(rm.BlockHashes) != 2 || asU64(t, rm.BlockHashes[1]) != HashID(h1) {
		t.Fatalf("removed %+v", rm)
	}
}

// asU64 reads a hash as llm-d does (any integer encoding).
func asU64(t *testing.T, v any) uint64 {
	t.Helper()
	b, err := msgpack.Marshal(v)
	var u uint64
	if err == nil {
		err = msgpack.Unmarshal(b, &u)
	}
	if err != nil {
		t.Fatalf("hash %v (%T): %v", v, v, err)
	}
	return u
}

// startPublisher serves a publisher on a loopback port (or a Unix socket).
func startPublisher(t *testing.T, network string, o Options) *Publisher {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "kv.sock")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	o.Listener = ln
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// endpoint is p's address as a ZeroMQ peer dials it.
func endpoint(p *Publisher) string {
	if p.Addr().Network() == "unix" {
		return "ipc://" + p.Addr().String()
	}
	return "tcp://" + p.Addr().String()
}

// subscribe dials p with go-zeromq's SUB (a real ZeroMQ peer) and returns
// its messages.
func subscribe(t *testing.T, ctx context.Context, p *Publisher, filter string) <-chan zmq4.Msg {
	t.Helper()
	sub := zmq4.NewSub(ctx)
	t.Cleanup(func() { sub.Close() })
	if err := sub.Dial(endpoint(p)); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, filter); err != nil {
		t.Fatal(err)
	}
	got := make(chan zmq4.Msg, 64)
	go func() {
		for {
			m, err := sub.Recv()
			if err != nil {
				close(got)
				return
			}
			got <- m
		}
	}()
	return got
}

// firstMessage sends on topic until a message reaches got (PUB drops until
// the subscription arrives).
func firstMessage(t *testing.T, ctx context.Context, topic *Topic, got <-chan zmq4.Msg) zmq4.Msg {
	t.Helper()
	for {
		topic.KVEvents([]kvcache.Event{{Kind: kvcache.Cleared}})
		select {
		case m, ok := <-got:
			if !ok {
				t.Fatal("subscriber closed")
			}
			return m
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no message reached the subscriber")
		}
	}
}

func TestPublishToASubscriber(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) { publishToASubscriber(t, network) })
	}
}

func publishToASubscriber(t *testing.T, network string) {
	p := startPublisher(t, network, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := subscribe(t, ctx, p, "kv@")
	topic := p.Topic("10.0.0.7:8000", "qwen", "CPU")
	ev := []kvcache.Event{{Kind: kvcache.Cleared}}
	first := firstMessage(t, ctx, topic, got)
	if len(first.Frames) != 3 || string(first.Frames[0]) != "kv@10.0.0.7:8000@qwen" || len(first.Frames[1]) != 8 {
		t.Fatalf("message frames %q", first.Frames)
	}
	last := binary.BigEndian.Uint64(first.Frames[1])
	for range 5 {
		topic.KVEvents(ev)
	}
	for range 5 {
		m := <-got
		seq := binary.BigEndian.Uint64(m.Frames[1])
		if seq <= last {
			t.Fatalf("sequence %d after %d", seq, last)
		}
		last = seq
		if !strings.HasPrefix(string(m.Frames[0]), "kv@") {
			t.Fatalf("topic %q", m.Frames[0])
		}
	}
}

func TestDecodeReadsWhatEncodeWrites(t *testing.T) {
	h0 := kvcache.ChainHash(kvcache.Hash{}, []int{1, 2})
	h1 := kvcache.ChainHash(h0, []int{3, 4})
	in := []kvcache.Event{{Kind: kvcache.Cleared},
		{Kind: kvcache.Stored, Hashes: []kvcache.Hash{h0, h1}, Tokens: []int{1, 2, 3, 4}},
		{Kind: kvcache.Stored, Hashes: []kvcache.Hash{h1}, Parent: h0, HasParent: true, Tokens: []int{3, 4}},
		{Kind: kvcache.Removed, Hashes: []kvcache.Hash{h1}}}
	payload, err := Encode(3, in, "GPU")
	if err != nil {
		t.Fatal(err)
	}
	ts, out, err := Decode(payload)
	if err != nil || ts != 3 || len(out) != len(in) {
		t.Fatalf("decoded %v %+v (%v)", ts, out, err)
	}
	for i, e := range in {
		o := out[i]
		if o.Kind != e.Kind || len(o.Hashes) != len(e.Hashes) || !slices.Equal(o.Tokens, e.Tokens) ||
			(o.Parent != nil) != e.HasParent || e.HasParent && *o.Parent != HashID(e.Parent) {
			t.Errorf("event %d: sent %+v, read %+v", i, e, o)
		}
		if e.Kind != kvcache.Cleared && o.Medium != "GPU" {
			t.Errorf("event %d: medium %q", i, o.Medium)
		}
	}
	if _, _, err := Decode([]byte{0x93, 1, 2}); err == nil {
		t.Error("a malformed payload decoded")
	}
}
