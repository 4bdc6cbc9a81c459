package kvevents

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/batchd/batchd/kvcache"
)

// DefaultEndpoint is where vLLM's publisher binds by default, and the port
// llm-d's pod discovery dials.
const DefaultEndpoint = "tcp://*:5557"

// DefaultHWM bounds the messages queued for subscribers.
const DefaultHWM = 10000

// Options configures a Publisher.
type Options struct {
	Endpoint string // ZeroMQ endpoint to bind, e.g. "tcp://*:5557"
	HWM      int    // queued messages past which new ones are dropped; default DefaultHWM
	Logger   *slog.Logger
	Now      func() time.Time
}

// Publisher owns the PUB socket that every model's Topic sends on.
type Publisher struct {
	sock zmq4.Socket
	log  *slog.Logger
	now  func() time.Time

	mu     sync.Mutex // serialises a message's sequence number with its queueing
	sent   atomic.Uint64
	closed atomic.Bool
}

// New binds the socket.
func New(o Options) (*Publisher, error) {
	if o.HWM <= 0 {
		o.HWM = DefaultHWM
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	sock := zmq4.NewPub(context.Background())
	if err := sock.SetOption(zmq4.OptionHWM, o.HWM); err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("kv events: %w", err)
	}
	if err := sock.Listen(o.Endpoint); err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("kv events: %w", err)
	}
	return &Publisher{sock: sock, log: o.Logger.With("component", "kv_events"), now: o.Now}, nil
}

// Addr is the bound address (its port, when the endpoint asked for any).
func (p *Publisher) Addr() net.Addr { return p.sock.Addr() }

// Subscribed reports whether some subscriber's filter takes topic.
func (p *Publisher) Subscribed(topic string) bool {
	ts, ok := p.sock.(zmq4.Topics)
	if !ok {
		return false
	}
	for _, f := range ts.Topics() {
		if strings.HasPrefix(topic, f) {
			return true
		}
	}
	return false
}

// Sent counts the messages queued so far.
func (p *Publisher) Sent() uint64 { return p.sent.Load() }

// Close stops publishing; Topics' later events are dropped.
func (p *Publisher) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	return p.sock.Close()
}

// TopicName is vLLM's topic as llm-d parses it: kv@<pod>@<model>.
func TopicName(pod, model string) string { return "kv@" + pod + "@" + model }

// Topic is one model's stream of events; it is an engine.KVEventSink.
type Topic struct {
	p      *Publisher
	name   []byte
	medium string
	seq    uint64 // guarded by p.mu
}

// Topic returns the sink for one model's engine. medium names where its KV
// lives (vLLM's "GPU", or "CPU").
func (p *Publisher) Topic(pod, model, medium string) *Topic {
	return &Topic{p: p, name: []byte(TopicName(pod, model)), medium: medium}
}

// KVEvents encodes one step's events as one message and queues it.
func (t *Topic) KVEvents(evs []kvcache.Event) {
	if t.p.closed.Load() || len(evs) == 0 {
		return
	}
	payload, err := Encode(float64(t.p.now().UnixNano())/1e9, evs, t.medium)
	if err != nil { // our own values: cannot happen, but never panic the loop
		t.p.log.Error("encode kv events", "err", err)
		return
	}
	t.p.mu.Lock()
	defer t.p.mu.Unlock()
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], t.seq)
	t.seq++
	if err := t.p.sock.SendMulti(zmq4.NewMsgFrom(t.name, seq[:], payload)); err != nil {
		t.p.log.Debug("kv events not queued", "err", err)
		return
	}
	t.p.sent.Add(1)
}

// HashID is a block hash as the events carry it.
func HashID(h kvcache.Hash) uint64 { return binary.BigEndian.Uint64(h[:8]) }

// Encode writes vLLM's KVEventBatch: [ts, [event...]].
func Encode(ts float64, evs []kvcache.Event, medium string) ([]byte, error) {
	out := make([]any, 0, len(evs))
	for _, e := range evs {
		switch e.Kind {
		case kvcache.Stored:
			var parent any
			if e.HasParent {
				parent = HashID(e.Parent)
			}
			bs := 0
			if len(e.Hashes) > 0 {
				bs = len(e.Tokens) / len(e.Hashes)
			}
			// lora_id, medium, lora_name: vLLM sends every field (none
			// has a default) and llm-d's decoder wants all eight.
			out = append(out, []any{"BlockStored", hashIDs(e.Hashes), parent, e.Tokens, bs, nil, medium, nil})
		case kvcache.Removed:
			out = append(out, []any{"BlockRemoved", hashIDs(e.Hashes), medium})
		case kvcache.Cleared:
			out = append(out, []any{"AllBlocksCleared"})
		}
	}
	return msgpack.Marshal([]any{ts, out})
}

func hashIDs(hs []kvcache.Hash) []uint64 {
	out := make([]uint64, len(hs))
	for i, h := range hs {
		out[i] = HashID(h)
	}
	return out
}
