package ipc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batchd/batchd/ipc/wire"
)

// fakeBackend runs requests that stream one delta and then wait to be cancelled.
type fakeBackend struct {
	mu     sync.Mutex
	next   uint64
	owners map[uint64]uint32
	stops  map[uint64]chan struct{}
}

type fakeStream struct {
	id    uint64
	ctx   context.Context
	stop  chan struct{}
	steps int
	big   bool // prompt "big": one 600 KB delta, then done at once
	// panics: prompt "panic later": Next panics (prompt "panic": Submit does)
	panics bool
}

func (f *fakeBackend) Submit(ctx context.Context, p Peer, s *wire.Submit) (RequestStream, error) {
	if s.MaxTokens < 0 {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "max_tokens")
	}
	if s.Prompt == "panic" {
		var m map[string]int
		m["a bug"]++ // a nil map write: a real runtime panic
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	stop := make(chan struct{})
	f.owners[f.next], f.stops[f.next] = p.UID, stop
	return &fakeStream{id: f.next, ctx: ctx, stop: stop, big: s.Prompt == "big", panics: s.Prompt == "panic later"}, nil
}

func (f *fakeBackend) Cancel(p Peer, id uint64, admin bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	owner, ok := f.owners[id]
	if !ok {
		return wire.Errorf(wire.CodeNotFound, "request %d", id)
	}
	if owner != p.UID && !admin {
		return wire.Errorf(wire.CodePermissionDenied, "not yours")
	}
	close(f.stops[id])
	delete(f.owners, id)
	return nil
}

func (f *fakeBackend) Stats() *wire.StatsReport {
	return &wire.StatsReport{Requests: []wire.RequestInfo{{ID: 1, UID: 1000}, {ID: 2, UID: 2000}, {ID: 3, UID: 1000}}}
}
func (f *fakeBackend) Health() wire.Health { return wire.Health{State: "ready"} }

func (s *fakeStream) RequestID() uint64   { return s.id }
func (s *fakeStream) PromptTokens() []int { return []int{1} }
func (s *fakeStream) Next(ctx context.Context) (Event, error) {
	s.steps++
	if s.panics {
		panic("a stream's bug")
	}
	switch {
	case s.steps == 1 && s.big:
		return Event{Text: strings.Repeat("x", 600<<10), Tokens: []int{7}}, nil
	case s.steps == 1:
		return Event{Text: "hi", Tokens: []int{7}}, nil
	case s.big:
		return Event{Done: &wire.Done{FinishReason: "stop"}}, nil
	}
	select {
	case <-s.stop:
	case <-s.ctx.Done():
	}
	return Event{Done: &wire.Done{FinishReason: "cancelled"}}, nil
}

type testServer struct {
	s     *Server
	sock  string
	peers chan Peer
}

func startServer(t *testing.T, pol Policy) *testServer {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(ListenOptions{Path: sock})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{s: NewServer(Options{Backend: &fakeBackend{owners: map[uint64]uint32{}, stops: map[uint64]chan struct{}{}},
		Policy: pol}), sock: sock, peers: make(chan Peer, 8)}
	ts.s.peerCred = func(net.Conn) (Peer, error) { return <-ts.peers, nil }
	go func() { _ = ts.s.Serve(ln) }()
	t.Cleanup(func() { ts.s.Close() })
	return ts
}

type peerConn struct {
	c  net.Conn
	br *bufio.Reader
}

// dialAs connects as uid and says hello; it returns the hello reply's type.
func (ts *testServer) dialAs(t *testing.T, uid uint32) (*peerConn, string) {
	t.Helper()
	ts.peers <- Peer{UID: uid, GID: uid}
	c, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pc := &peerConn{c: c, br: bufio.NewReader(c)}
	if err := wire.WriteFrame(c, &wire.Hello{Type: wire.TypeHello, ID: 1, Version: wire.ProtocolVersion}); err != nil {
		t.Fatal(err)
	}
	h, _ := pc.next(t)
	return pc, h.Type
}

func (pc *peerConn) next(t *testing.T) (wire.Header, []byte) {
	t.Helper()
	_ = pc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	body, err := wire.ReadFrame(pc.br, wire.DefaultMaxFrame)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	h, err := wire.DecodeHeader(body)
	if err != nil {
		t.Fatal(err)
	}
	return h, body
}

func TestPeerNotAllowedIsRefused(t *testing.T) {
	ts := startServer(t, Policy{AllowedUIDs: []uint32{1000}, Self: 4242})
	pc, typ := ts.dialAs(t, 2000)
	if typ != wire.TypeError {
		t.Fatalf("refused peer got %q", typ)
	}
	_ = pc
	for _, uid := range []uint32{1000, 0, 4242} { // allowed, root, the daemon's own user
		if _, typ := ts.dialAs(t, uid); typ != wire.TypeHello {
			t.Fatalf("uid %d got %q", uid, typ)
		}
	}
}

func TestCancelOnlyOwnUnlessAdmin(t *testing.T) {
	ts := startServer(t, Policy{AdminUIDs: []uint32{3000}})
	owner, _ := ts.dialAs(t, 1000)
	if err := wire.WriteFrame(owner.c, &wire.Submit{Type: wire.TypeSubmit, ID: 9, Prompt: "x", Stream: true}); err != nil {
		t.Fatal(err)
	}
	_, body := owner.next(t)
	var acc wire.Accepted
	if err := wire.Decode(body, &acc); err != nil || acc.Type != wire.TypeAccepted {
		t.Fatalf("accepted: %+v %v", acc, err)
	}
	if h, _ := owner.next(t); h.Type != wire.TypeToken {
		t.Fatalf("want a token frame, got %q", h.Type)
	}
	other, _ := ts.dialAs(t, 1001)
	if err := wire.WriteFrame(other.c, &wire.Cancel{Type: wire.TypeCancel, ID: 2, RequestID: acc.RequestID}); err != nil {
		t.Fatal(err)
	}
	_, body = other.next(t)
	var e wire.ErrorFrame
	_ = wire.Decode(body, &e)
	if e.Code != wire.CodePermissionDenied {
		t.Fatalf("another user's cancel: %+v", e)
	}
	admin, _ := ts.dialAs(t, 3000)
	if err := wire.WriteFrame(admin.c, &wire.Cancel{Type: wire.TypeCancel, ID: 3, RequestID: acc.RequestID}); err != nil {
		t.Fatal(err)
	}
	if h, _ := admin.next(t); h.Type != wire.TypeCancelled {
		t.Fatalf("admin cancel got %q", h.Type)
	}
	if h, _ := owner.next(t); h.Type != wire.TypeDone {
		t.Fatalf("owner got %q, want done", h.Type)
	}
}

func TestPerUserLimit(t *testing.T) {
	ts := startServer(t, Policy{MaxRequestsPerUser: 2})
	pc, _ := ts.dialAs(t, 1000)
	for id := uint64(1); id <= 3; id++ {
		if err := wire.WriteFrame(pc.c, &wire.Submit{Type: wire.TypeSubmit, ID: id, Prompt: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var codes []string
	for range 3 {
		_, body := pc.next(t)
		var e wire.ErrorFrame
		_ = wire.Decode(body, &e)
		codes = append(codes, e.Type+":"+e.Code)
	}
	if codes[2] != "error:"+wire.CodeResourceExhausted {
		t.Fatalf("third request: %v", codes)
	}
}

func TestErrorsMatchAcrossTheWire(t *testing.T) {
	var e error = &wire.Error{Code: wire.CodeQueueFull, Message: "100 waiting"}
	if !isErr(e, wire.ErrQueueFull) || !isErr(e, wire.ErrResourceExhausted) || isErr(e, wire.ErrNotFound) {
		t.Fatal("error codes do not match their sentinels")
	}
}

func isErr(err, target error) bool {
	type iser interface{ Is(error) bool }
	return err.(iser).Is(target)
}

// FuzzDecodeFrame feeds arbitrary bytes to the frame reader and decoders:
// they may fail, never panic or allocate past the frame limit.
func FuzzDecodeFrame(f *testing.F) {
	var buf bytes.Buffer
	_ = wire.WriteFrame(&buf, &wire.Submit{Type: wire.TypeSubmit, ID: 3, Prompt: "hi", MaxTokens: 4, Stop: []string{"x"}})
	f.Add(buf.Bytes())
	f.Add([]byte{0, 0, 0, 2, 0x81, 0xa0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := wire.ReadFrame(bufio.NewReader(bytes.NewReader(b)), 4096)
		if err != nil {
			return
		}
		if len(body) > 4096 {
			t.Fatalf("frame of %d bytes past the limit", len(body))
		}
		if _, err := wire.DecodeHeader(body); err != nil {
			return
		}
		var s wire.Submit
		_ = wire.Decode(body, &s)
		var c wire.Cancel
		_ = wire.Decode(body, &c)
	})
}

func TestRealPeerCredentials(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(ListenOptions{Path: sock, Mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Options{Backend: &fakeBackend{}})
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := wire.WriteFrame(c, &wire.Hello{Type: wire.TypeHello, ID: 1, Version: wire.ProtocolVersion}); err != nil {
		t.Fatal(err)
	}
	body, err := wire.ReadFrame(bufio.NewReader(c), wire.DefaultMaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	var h wire.Hello
	if err := wire.Decode(body, &h); err != nil || h.UID != uint32(os.Getuid()) {
		t.Fatalf("hello %+v (%v): the server saw the wrong uid", h, err)
	}
	// A second Listen on a live socket refuses; on a stale one it replaces it.
	if _, err := Listen(ListenOptions{Path: sock}); err == nil {
		t.Fatal("listened over a live socket")
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v", st.Mode(), err)
	}
}

func TestListenRejectsLongPathsAndNonSockets(t *testing.T) {
	dir := t.TempDir()
	if _, err := Listen(ListenOptions{Path: filepath.Join(dir, strings.Repeat("x", 120))}); err == nil {
		t.Fatal("accepted a path longer than sun_path")
	}
	file := filepath.Join(dir, "file")
	_ = os.WriteFile(file, nil, 0o644)
	if _, err := Listen(ListenOptions{Path: file}); err == nil {
		t.Fatal("replaced a regular file")
	}
}

// reloadingBackend is a fakeBackend that can reload.
type reloadingBackend struct {
	*fakeBackend
	reloads int
}

func (b *reloadingBackend) Reload(Peer) (*wire.Reload, error) {
	b.reloads++
	return &wire.Reload{Applied: true, RestartNeeded: []string{"server.socket"}}, nil
}

// TestReloadIsForAdmins: an admin's reload reaches the backend and gets
// its answer; anyone else's is permission_denied and reaches nothing.
func TestReloadIsForAdmins(t *testing.T) {
	ts := startServer(t, Policy{AdminUIDs: []uint32{3000}})
	rb := &reloadingBackend{fakeBackend: ts.s.backend.(*fakeBackend)}
	ts.s.backend = rb
	for uid, want := range map[uint32]string{1000: wire.TypeError, 3000: wire.TypeReload, 0: wire.TypeReload} {
		pc, _ := ts.dialAs(t, uid)
		if err := wire.WriteFrame(pc.c, &wire.Reload{Type: wire.TypeReload, ID: 5}); err != nil {
			t.Fatal(err)
		}
		h, body := pc.next(t)
		if h.Type != want || h.ID != 5 {
			t.Errorf("uid %d: reply %q (id %d), want %q", uid, h.Type, h.ID, want)
		}
		var r wire.Reload
		if want == wire.TypeReload && (wire.Decode(body, &r) != nil || !r.Applied || len(r.RestartNeeded) != 1) {
			t.Errorf("uid %d: reply %+v", uid, r)
		}
	}
	if rb.reloads != 2 {
		t.Errorf("%d reloads reached the backend, want 2", rb.reloads)
	}
}

// TestShutdownWaitsForDoneFrames: a request's slot is freed just before its
// done frame is written, so Shutdown, which waited only for slots, closed
// the connection under a done frame the client had not yet taken (seen
// as TestShutdownDrainsThenCancels' result without a finish reason). The
// frame here is larger than the socket buffer and the client reads only
// after Shutdown has begun: it must still get the whole answer.
func TestShutdownWaitsForDoneFrames(t *testing.T) {
	ts := startServer(t, Policy{AllowedUIDs: []uint32{1000}})
	pc, typ := ts.dialAs(t, 1000)
	if typ != wire.TypeHello {
		t.Fatalf("hello: %s", typ)
	}
	if err := wire.WriteFrame(pc.c, &wire.Submit{Type: wire.TypeSubmit, ID: 5, Prompt: "big"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ts.s.mu.Lock()
		freed := len(ts.s.inflight) == 0 && ts.s.writing == 1
		ts.s.mu.Unlock()
		if freed {
			break // the slot is free, the done frame is stuck in the socket
		}
		if time.Now().After(deadline) {
			t.Fatal("the done frame never started")
		}
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- ts.s.Shutdown(ctx)
	}()
	time.Sleep(100 * time.Millisecond)
	for {
		h, body := pc.next(t)
		if h.Type != wire.TypeDone {
			continue
		}
		var d wire.Done
		if err := wire.Decode(body, &d); err != nil || len(d.Text) != 600<<10 || d.FinishReason != "stop" {
			t.Fatalf("done: %d bytes of text, finish %q, %v", len(d.Text), d.FinishReason, err)
		}
		break
	}
	if err := <-shut; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestPanicsFailTheirRequestOnly: a backend that panics in Submit or in a
// stream's Next fails that request with an internal error frame; the
// connection and the server go on (a panic used to end the process).
func TestPanicsFailTheirRequestOnly(t *testing.T) {
	ts := startServer(t, Policy{})
	pc, typ := ts.dialAs(t, 1000)
	if typ != wire.TypeHello {
		t.Fatalf("hello: %s", typ)
	}
	for i, prompt := range []string{"panic", "panic later", "fine"} {
		id := uint64(10 + i)
		if err := wire.WriteFrame(pc.c, &wire.Submit{Type: wire.TypeSubmit, ID: id, Prompt: prompt}); err != nil {
			t.Fatal(err)
		}
		for {
			h, body := pc.next(t)
			if h.ID != id {
				continue
			}
			if prompt == "fine" { // accepted: it streams until cancelled
				if h.Type != wire.TypeAccepted {
					t.Errorf("%q after the panics: %s %q", prompt, h.Type, body)
				}
				break
			}
			if h.Type == wire.TypeAccepted {
				continue
			}
			var e wire.ErrorFrame
			if h.Type != wire.TypeError || wire.Decode(body, &e) != nil || e.Code != wire.CodeInternal {
				t.Errorf("%q: got %s %q, want an internal error frame", prompt, h.Type, body)
			}
			break
		}
	}
}

// loadingBackend is a fakeBackend whose loads wait until their context
// ends, and count the ones that were cancelled.
type loadingBackend struct {
	*fakeBackend
	started, cancelled chan struct{}
}

func (b *loadingBackend) LoadModel(ctx context.Context, p Peer, name, keepAlive string, unload bool) error {
	b.started <- struct{}{}
	<-ctx.Done()
	b.cancelled <- struct{}{}
	return ctx.Err()
}

// TestLoadsAreCountedAndCancelled: a load frame counts against the user's
// cap like a request (2,000 of them were served one by one, uncounted)
// and ends when its connection does.
func TestLoadsAreCountedAndCancelled(t *testing.T) {
	ts := startServer(t, Policy{MaxRequestsPerUser: 1})
	lb := &loadingBackend{fakeBackend: ts.s.backend.(*fakeBackend), started: make(chan struct{}, 4), cancelled: make(chan struct{}, 4)}
	ts.s.backend = lb
	pc, _ := ts.dialAs(t, 1000)
	if err := wire.WriteFrame(pc.c, &wire.Load{Type: wire.TypeLoad, ID: 2, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	<-lb.started
	if err := wire.WriteFrame(pc.c, &wire.Load{Type: wire.TypeLoad, ID: 3, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	h, body := pc.next(t)
	var e wire.ErrorFrame
	if h.ID != 3 || h.Type != wire.TypeError || wire.Decode(body, &e) != nil || e.Code != wire.CodeResourceExhausted {
		t.Fatalf("a second load past the cap of 1: %s %q", h.Type, body)
	}
	pc.c.Close()
	select {
	case <-lb.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the load went on after its connection closed")
	}
}

// TestStatsShowOwnRequests: a user's stats list only their own requests
// in flight (every user's uid, model and tokens were shown to anyone
// allowed); an admin sees all.
func TestStatsShowOwnRequests(t *testing.T) {
	ts := startServer(t, Policy{AdminUIDs: []uint32{3000}})
	for uid, want := range map[uint32][]uint64{1000: {1, 3}, 2000: {2}, 3000: {1, 2, 3}, 4000: nil} {
		pc, _ := ts.dialAs(t, uid)
		if err := wire.WriteFrame(pc.c, map[string]any{"type": wire.TypeStats, "id": 5}); err != nil {
			t.Fatal(err)
		}
		_, body := pc.next(t)
		var st wire.Stats
		if err := wire.Decode(body, &st); err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, r := range st.Stats.Requests {
			got = append(got, r.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("uid %d sees requests %v, want %v", uid, got, want)
		}
	}
}
