package kvevents

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchd/batchd/kvcache"
)

// rawHandshake greets p as a SUB peer would, by hand, and returns the
// connection after both READY commands.
func rawHandshake(t *testing.T, p *Publisher) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial(p.Addr().Network(), p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := bufio.NewReader(c)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(greeting()); err != nil {
		t.Fatal(err)
	}
	g := make([]byte, greetingLen)
	if _, err := io.ReadFull(r, g); err != nil {
		t.Fatal(err)
	}
	if err := checkGreeting(g); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(appendFrame(nil, flagCommand, commandBody("READY", property("Socket-Type", "SUB")))); err != nil {
		t.Fatal(err)
	}
	if _, body, err := readFrame(r, maxInFrame); err != nil || string(body[1:6]) != "READY" {
		t.Fatalf("READY: %q %v", body, err)
	}
	return c, r
}

// closedByPeer reports whether c is hung up on within a few seconds.
func closedByPeer(c net.Conn, r *bufio.Reader) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, err := r.ReadByte(); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// TestHostileFramesCloseOnlyTheirConnection: a frame whose length would
// allocate exabytes (it panicked go-zeromq's reader and ended the daemon),
// reserved flags, a multipart subscription and a non-SUB peer each close
// that connection; a real subscriber is served throughout.
func TestHostileFramesCloseOnlyTheirConnection(t *testing.T) {
	p := startPublisher(t, "tcp", Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := subscribe(t, ctx, p, "kv@")
	topic := p.Topic("pod", "m", "CPU")
	firstMessage(t, ctx, topic, got)
	for name, frame := range map[string][]byte{
		"huge long command":  {0x06, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"huge long message":  {0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00},
		"reserved flags":     {0x80, 0x01, 0x01},
		"multipart":          {0x01, 0x02, 0x01, 'k'},
		"not a subscription": {0x00, 0x02, 0x07, 'k'},
	} {
		c, r := rawHandshake(t, p)
		if _, err := c.Write(frame); err != nil {
			t.Fatal(err)
		}
		if !closedByPeer(c, r) {
			t.Errorf("%s: the connection stayed open", name)
		}
	}
	// A peer that is not a SUB is refused at READY.
	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	_, _ = c.Write(greeting())
	_, _ = c.Write(appendFrame(nil, flagCommand, commandBody("READY", property("Socket-Type", "PUSH"))))
	if !closedByPeer(c, r) {
		t.Error("a PUSH peer stayed connected")
	}
	if m := firstMessage(t, ctx, topic, got); len(m.Frames) != 3 {
		t.Fatalf("after the hostile peers: %q", m.Frames)
	}
}

// TestIdleConnectionsDoNotStallOthers: connections that never greet hold
// only their own goroutine until the handshake deadline; a subscriber that
// comes after them is served at once (the accept loop used to wait on
// each handshake in turn).
func TestIdleConnectionsDoNotStallOthers(t *testing.T) {
	p := startPublisher(t, "tcp", Options{HandshakeTimeout: 300 * time.Millisecond})
	var idle []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", p.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // well below 20 handshake deadlines
	defer cancel()
	got := subscribe(t, ctx, p, "")
	firstMessage(t, ctx, p.Topic("pod", "m", "CPU"), got)
	for i, c := range idle {
		if !closedByPeer(c, bufio.NewReader(c)) {
			t.Fatalf("idle connection %d outlived the handshake deadline", i)
		}
	}
}

// TestAdmitDecides: the admission hook runs after the handshake, and a
// peer it refuses is hung up on before it can read a message.
func TestAdmitDecides(t *testing.T) {
	var asked atomic.Int32
	p := startPublisher(t, "unix", Options{Admit: func(c net.Conn) error {
		asked.Add(1)
		return errors.New("not allowed")
	}})
	c, r := rawHandshake(t, p)
	if _, err := c.Write(appendFrame(nil, 0, []byte{1})); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Logf("subscribe: %v", err)
	}
	p.Topic("pod", "m", "CPU").KVEvents([]kvcache.Event{{Kind: kvcache.Cleared}})
	if !closedByPeer(c, r) {
		t.Fatal("a refused peer stayed connected")
	}
	if asked.Load() != 1 || p.Subscribers() != 0 {
		t.Fatalf("admit asked %d times, %d subscribers", asked.Load(), p.Subscribers())
	}
}

// TestSubscriptionsAreBounded: past maxFilters subscriptions a peer is
// hung up on; ZMTP 3.1's SUBSCRIBE command counts as one.
func TestSubscriptionsAreBounded(t *testing.T) {
	p := startPublisher(t, "tcp", Options{})
	c, r := rawHandshake(t, p)
	for i := range maxFilters + 1 {
		f := appendFrame(nil, flagCommand, commandBody("SUBSCRIBE", []byte{byte(i), byte(i >> 8)}))
		if _, err := c.Write(f); err != nil {
			break
		}
	}
	if !closedByPeer(c, r) {
		t.Fatal("a peer with too many subscriptions stayed connected")
	}
}

// TestSlowSubscriberCostsBoundedMemory: a subscriber that never reads
// loses messages past its queue; publishing never blocks.
func TestSlowSubscriberCostsBoundedMemory(t *testing.T) {
	p := startPublisher(t, "unix", Options{HWM: 8}) // a Unix socket's buffers are small
	c, _ := rawHandshake(t, p)
	if _, err := c.Write(appendFrame(nil, 0, []byte{1})); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !p.Subscribed("kv@x") {
		if time.Now().After(deadline) {
			t.Fatal("the subscription never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
	topic := p.Topic("pod", "m", "CPU")
	big := []kvcache.Event{{Kind: kvcache.Stored, Hashes: make([]kvcache.Hash, 16), Tokens: make([]int, 512)}}
	for range 2000 { // about 2 MB: more than the socket's buffers
		topic.KVEvents(big)
	}
	if p.Dropped() == 0 {
		t.Fatal("nothing was dropped for a subscriber that reads nothing")
	}
	if p.Sent() != 2000 {
		t.Fatalf("%d messages numbered, want 2000", p.Sent())
	}
}
