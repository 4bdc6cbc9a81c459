package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/testing/synth"
)

// kvHandshake greets the daemon's KV-event port as a SUB and returns the
// connection once both READY commands crossed (nil if it was hung up on).
func kvHandshake(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	g := make([]byte, 64)
	g[0], g[8], g[9], g[10], g[11] = 0xFF, 1, 0x7F, 3, 1
	copy(g[12:], "NULL")
	ready := append([]byte{0x04, 0}, "\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB"...)
	ready[1] = byte(len(ready) - 2)
	r := bufio.NewReader(c)
	if _, err := c.Write(append(g, ready...)); err != nil {
		return nil
	}
	if _, err := io.ReadFull(r, make([]byte, 64+2+len("\x05READY\x0bSocket-Type\x00\x00\x00\x03PUB"))); err != nil {
		return nil
	}
	_ = c.SetDeadline(time.Time{})
	return c
}

// TestKVEventsRefuseOutsiders: a subscriber from an address outside
// allow_from is hung up on after the handshake and reads nothing (any
// local process could read every user's prompt token ids before;
// config.TestKVEventsTCPNeedsAllowFrom checks the config's side).
func TestKVEventsRefuseOutsiders(t *testing.T) {
	td := startDaemonFlags(t, "[kv_events]\nendpoint = \"tcp://127.0.0.1:0\"\nallow_from = [\"10.0.0.0/8\"]\n",
		ServeFlags{Model: synth.TinyFile(t, 256)})
	c := kvHandshake(t, td.d.kvPub.Addr().String())
	if c == nil {
		t.Fatal("the handshake failed")
	}
	_, _ = c.Write([]byte{0, 1, 1}) // subscribe to everything
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 16)); err == nil {
		t.Fatalf("an outsider read %d bytes", n)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("an outsider stayed connected")
	}
	if td.d.kvPub.Subscribers() != 0 {
		t.Fatalf("%d subscribers", td.d.kvPub.Subscribers())
	}
}

// TestKVEventsOverIPC: an ipc:// endpoint is a Unix socket with the
// server socket's mode, and a ZeroMQ SUB of an allowed user reads events.
func TestKVEventsOverIPC(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.sock")
	td := startDaemonFlags(t, fmt.Sprintf("[model]\nchat_template = \"chatml\"\n[kv_events]\nendpoint = \"ipc://%s\"\n", path),
		ServeFlags{Model: synth.TinyFile(t, 256)})
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o660 {
		t.Fatalf("socket %v (%v), want mode 0660", st, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.Dial("ipc://" + path); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	for !td.d.kvPub.Subscribed("kv@") {
		if ctx.Err() != nil {
			t.Fatal("the subscription never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := td.dial(t)
	go func() {
		for ctx.Err() == nil {
			_, _ = c.Generate(ctx, client.Request{Prompt: strings.Repeat("a b c d ", 12), MaxTokens: 2}, nil)
		}
	}()
	m, err := sub.Recv()
	if err != nil || len(m.Frames) != 3 || !strings.HasPrefix(string(m.Frames[0]), "kv@") {
		t.Fatalf("message %q (%v)", m.Frames, err)
	}
}

// TestKVEventConnectionsAreInTheBudget: handshaken subscribers past the
// budget's share are refused, and the msgpack socket still answers (492
// of them exhausted the descriptors outside the budget before).
func TestKVEventConnectionsAreInTheBudget(t *testing.T) {
	td := startDaemonFlags(t, "[server]\nmax_connections = 16\n[kv_events]\nendpoint = \"tcp://127.0.0.1:0\"\nallow_from = [\"127.0.0.0/8\"]\n",
		ServeFlags{Model: synth.TinyFile(t, 256)})
	for range 40 {
		if c := kvHandshake(t, td.d.kvPub.Addr().String()); c != nil {
			_, _ = c.Write([]byte{0, 1, 1})
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := td.d.kvPub.Subscribers(); n > 16/4 {
		t.Errorf("%d subscribers admitted past the per-user share of a 16-connection budget", n)
	}
	st := td.d.conns.Stats()
	if st.Open > st.Max {
		t.Errorf("%d connections open, budget %d", st.Open, st.Max)
	}
	c := td.dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Health(ctx); err != nil {
		t.Fatalf("health beside the subscribers: %v", err)
	}
}
