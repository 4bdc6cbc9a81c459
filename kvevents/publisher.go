package kvevents

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/batchd/batchd/kvcache"
)

// DefaultEndpoint is where vLLM's publisher binds by default, and the port
// llm-d's pod discovery dials.
const DefaultEndpoint = "tcp://*:5557"

// DefaultHWM bounds the messages queued for one subscriber.
const DefaultHWM = 10000

// maxQueuedBytes bounds the bytes queued for one subscriber, whatever the
// message count: a subscriber that stops reading costs at most this.
const maxQueuedBytes = 16 << 20

// DefaultHandshakeTimeout is how long a connection has to finish the
// greeting and READY exchange.
const DefaultHandshakeTimeout = 5 * time.Second

// Options configures a Publisher.
type Options struct {
	// Listener accepts the subscribers' connections: the caller binds it
	// (ParseEndpoint) and may wrap it (a connection budget).
	Listener net.Listener
	// Admit decides, after the handshake, whether the peer on c may read
	// the events (its credentials, its address) and takes its place in
	// any budget; an error closes c. Nil admits every peer.
	Admit            func(c net.Conn) error
	HWM              int           // messages queued per subscriber past which new ones are dropped; default DefaultHWM
	HandshakeTimeout time.Duration // default DefaultHandshakeTimeout
	Logger           *slog.Logger
	Now              func() time.Time
}

// Publisher is a ZeroMQ PUB endpoint that every model's Topic sends on.
type Publisher struct {
	ln  net.Listener
	o   Options
	log *slog.Logger

	mu   sync.Mutex // the subscribers; a topic's sequence number with its queueing
	subs map[*subscriber]struct{}

	sent    atomic.Uint64
	dropped atomic.Uint64
	closed  atomic.Bool
	wg      sync.WaitGroup
}

// ParseEndpoint reads a ZeroMQ endpoint as net.Listen takes it:
// tcp://HOST:PORT ("*" is every address) or ipc:///path (a Unix socket).
func ParseEndpoint(endpoint string) (network, addr string, err error) {
	switch {
	case strings.HasPrefix(endpoint, "tcp://"):
		addr = strings.TrimPrefix(endpoint, "tcp://")
		if strings.HasPrefix(addr, "*:") {
			addr = addr[1:]
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", "", fmt.Errorf("kv events endpoint %q: %w", endpoint, err)
		}
		return "tcp", addr, nil
	case strings.HasPrefix(endpoint, "ipc://"):
		addr = strings.TrimPrefix(endpoint, "ipc://")
		if !strings.HasPrefix(addr, "/") {
			return "", "", fmt.Errorf("kv events endpoint %q: want ipc:///absolute/path", endpoint)
		}
		return "unix", addr, nil
	}
	return "", "", fmt.Errorf("kv events endpoint %q: want tcp://HOST:PORT or ipc:///path", endpoint)
}

// New starts accepting subscribers on o.Listener.
func New(o Options) (*Publisher, error) {
	if o.Listener == nil {
		return nil, errors.New("kv events: no listener")
	}
	if o.HWM <= 0 {
		o.HWM = DefaultHWM
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Publisher{ln: o.Listener, o: o, log: o.Logger.With("component", "kv_events"), subs: map[*subscriber]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// accept hands each connection to its own goroutine at once: a peer that
// never finishes its handshake holds only that goroutine, until its
// deadline.
func (p *Publisher) accept() {
	defer p.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			p.log.Warn("accept failed", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve runs one subscriber: the handshake, admission, then its
// subscriptions until it hangs up.
func (p *Publisher) serve(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	r := bufio.NewReaderSize(c, 512)
	if err := handshake(c, r, p.o.Now().Add(p.o.HandshakeTimeout)); err != nil {
		p.log.Debug("subscriber handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	if p.o.Admit != nil {
		if err := p.o.Admit(c); err != nil {
			p.log.Warn("subscriber refused", "remote", c.RemoteAddr().String(), "err", err)
			return
		}
	}
	s := &subscriber{p: p, c: c, out: make(chan []byte, p.o.HWM), quit: make(chan struct{})}
	if !p.add(s) {
		return
	}
	defer p.remove(s)
	go s.write()
	if err := s.read(r); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		p.log.Debug("subscriber dropped", "remote", c.RemoteAddr().String(), "err", err)
	}
}

func (p *Publisher) add(s *subscriber) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return false
	}
	p.subs[s] = struct{}{}
	return true
}

func (p *Publisher) remove(s *subscriber) {
	p.mu.Lock()
	delete(p.subs, s)
	p.mu.Unlock()
	close(s.quit)
	_ = s.c.Close()
}

// Addr is the bound address (its port, when the endpoint asked for any).
func (p *Publisher) Addr() net.Addr { return p.ln.Addr() }

// Subscribed reports whether some subscriber's filter takes topic.
func (p *Publisher) Subscribed(topic string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.subs {
		if s.wants([]byte(topic)) {
			return true
		}
	}
	return false
}

// Subscribers is how many peers are connected and admitted.
func (p *Publisher) Subscribers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs)
}

// Sent counts the messages published so far (each numbered, whether or
// not a subscriber took it).
func (p *Publisher) Sent() uint64 { return p.sent.Load() }

// Dropped counts messages a slow subscriber's full queue did not take.
func (p *Publisher) Dropped() uint64 { return p.dropped.Load() }

// Close stops accepting, hangs up on every subscriber and waits for their
// goroutines; Topics' later events are dropped.
func (p *Publisher) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	err := p.ln.Close()
	p.mu.Lock()
	for s := range p.subs {
		_ = s.c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// publish queues msg for every subscriber whose filter takes topic; a
// subscriber whose queue is full misses it (ZeroMQ's PUB drops the same way).
func (p *Publisher) publish(topic, msg []byte) {
	for s := range p.subs {
		if s.wants(topic) && !s.queue(msg) {
			p.dropped.Add(1)
		}
	}
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

// KVEvents encodes one step's events as one message and queues it for the
// subscribers; it never blocks on them.
func (t *Topic) KVEvents(evs []kvcache.Event) {
	if t.p.closed.Load() || len(evs) == 0 {
		return
	}
	payload, err := Encode(float64(t.p.o.Now().UnixNano())/1e9, evs, t.medium)
	if err != nil { // our own values: cannot happen, but never panic the loop
		t.p.log.Error("encode kv events", "err", err)
		return
	}
	t.p.mu.Lock()
	defer t.p.mu.Unlock()
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], t.seq)
	t.seq++
	msg := appendFrame(nil, flagMore, t.name)
	msg = appendFrame(msg, flagMore, seq[:])
	msg = appendFrame(msg, 0, payload)
	t.p.publish(t.name, msg)
	t.p.sent.Add(1)
}

// subscriber is one admitted SUB peer: its filters and its queue.
type subscriber struct {
	p       *Publisher
	c       net.Conn
	filters [][]byte // guarded by the publisher's mu
	out     chan []byte
	queued  atomic.Int64 // bytes in out
	quit    chan struct{}
}

// wants reports whether a filter takes topic (a prefix match, as ZeroMQ's).
// The publisher's mu is held.
func (s *subscriber) wants(topic []byte) bool {
	for _, f := range s.filters {
		if bytes.HasPrefix(topic, f) {
			return true
		}
	}
	return false
}

func (s *subscriber) queue(msg []byte) bool {
	if s.queued.Load()+int64(len(msg)) > maxQueuedBytes {
		return false
	}
	select {
	case s.out <- msg:
		s.queued.Add(int64(len(msg)))
		return true
	default:
		return false
	}
}

// write sends the queue; a peer that takes no bytes for a minute is hung up on.
func (s *subscriber) write() {
	for {
		select {
		case <-s.quit:
			return
		case msg := <-s.out:
			s.queued.Add(-int64(len(msg)))
			_ = s.c.SetWriteDeadline(time.Now().Add(time.Minute))
			if _, err := s.c.Write(msg); err != nil {
				_ = s.c.Close()
				return
			}
		}
	}
}

// read takes the peer's subscriptions: ZMTP 3.0's messages (0x01 or 0x00
// and the topic) and 3.1's SUBSCRIBE and CANCEL commands; a PING gets its
// PONG. Anything else, or past a bound, ends the connection.
func (s *subscriber) read(r *bufio.Reader) error {
	for {
		flags, body, err := readFrame(r, maxInFrame)
		if err != nil {
			return err
		}
		var sub bool
		var topic []byte
		switch {
		case flags&flagCommand != 0:
			name, data, err := parseCommand(body)
			if err != nil {
				return err
			}
			switch name {
			case "SUBSCRIBE", "CANCEL":
				sub, topic = name == "SUBSCRIBE", data
			case "PING":
				if len(data) < 2 {
					return fmt.Errorf("%w: a PING without its TTL", ErrProtocol)
				}
				pong := appendFrame(nil, flagCommand, commandBody("PONG", data[2:]))
				_ = s.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := s.c.Write(pong); err != nil { // beside write's messages: ZMTP frames are whole writes
					return err
				}
				continue
			default:
				continue // commands of no meaning to a PUB are ignored, as libzmq does
			}
		case flags&flagMore != 0 || len(body) == 0 || body[0] > 1:
			return fmt.Errorf("%w: a SUB peer sends subscriptions only", ErrProtocol)
		default:
			sub, topic = body[0] == 1, body[1:]
		}
		if err := s.subscribe(sub, topic); err != nil {
			return err
		}
	}
}

// HashID is a block hash as the events carry it.
func HashID(h kvcache.Hash) uint64 { return binary.BigEndian.Uint64(h[:8]) }

// Encode writes vLLM's KVEventBatch: [ts, [event...], data_parallel_rank],
// the rank nil (None: one engine, no data parallelism), as vLLM sends it;
// llm-d decodes exactly three fields.
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
	return msgpack.Marshal([]any{ts, out, nil})
}

func hashIDs(hs []kvcache.Hash) []uint64 {
	out := make([]uint64, len(hs))
	for i, h := range hs {
		out[i] = HashID(h)
	}
	return out
}

// subscribe adds or cancels a filter (an empty one takes every topic).
func (s *subscriber) subscribe(add bool, topic []byte) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	i := slices.IndexFunc(s.filters, func(f []byte) bool { return bytes.Equal(f, topic) })
	switch {
	case !add && i >= 0:
		s.filters = slices.Delete(s.filters, i, i+1)
	case add && i < 0:
		if len(s.filters) >= maxFilters {
			return fmt.Errorf("%w: more than %d subscriptions", ErrProtocol, maxFilters)
		}
		s.filters = append(s.filters, bytes.Clone(topic))
	}
	return nil
}
