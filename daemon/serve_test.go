package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testDaemon struct {
	d      *Daemon
	socket string
	log    *syncBuffer
	stop   func()
}

// startDaemon runs `batchd serve` in process on a socket in a temp dir with
// the stories260K model; config is TOML written to a file when not empty.
func startDaemon(t *testing.T, config string) *testDaemon {
	t.Helper()
	return startDaemonWith(t, config, testmodels.Path(t, "stories260K.bin"), testmodels.Path(t, "tok512.bin"))
}

// startSynthDaemon is startDaemon on a tiny random-weight model, for tests
// of behaviour that needs no real weights (they run without ../shared).
func startSynthDaemon(t *testing.T, config string) *testDaemon {
	t.Helper()
	return startDaemonWith(t, config, synth.TinyFile(t, 256), "")
}

func startDaemonWith(t *testing.T, config, model, tokenizer string) *testDaemon {
	t.Helper()
	return startDaemonFlags(t, config, ServeFlags{Model: model, Tokenizer: tokenizer})
}

// startDaemonFlags starts a daemon with these flags, its sockets (msgpack,
// and HTTP when f.HTTPSocket is "http") in a temp dir.
func startDaemonFlags(t *testing.T, config string, f ServeFlags) *testDaemon {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "batchd.sock")
	d := &Daemon{getenv: func(string) string { return "" }, ready: make(chan struct{})}
	d.flags = f
	d.flags.Socket, d.flags.LogLevel = sock, "debug"
	if f.HTTPSocket != "" {
		d.flags.HTTPSocket = filepath.Join(dir, "http.sock")
	}
	if config != "" {
		d.flags.Config = filepath.Join(dir, "batchd.toml")
		if err := os.WriteFile(d.flags.Config, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := d.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, cfg, log) }()
	select {
	case <-d.ready:
	case err := <-done:
		t.Fatalf("daemon exited: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not become ready")
	}
	td := &testDaemon{d: d, socket: sock, log: log}
	var once sync.Once
	td.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("daemon: %v", err)
			}
		})
	}
	t.Cleanup(td.stop)
	return td
}

func (td *testDaemon) dial(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), td.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitIdle waits until the engine holds no KV blocks and runs nothing.
func (td *testDaemon) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := td.d.defaultModel().Engine.Stats()
		if s.KVBlocksUsed == 0 && s.Running == 0 && s.Waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine not idle: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServeGoldensFromConcurrentClients(t *testing.T) {
	// float32 K and V: see TestGenerateGoldens.
	td := startDaemon(t, "[engine]\nkv_cache_type = \"f32\"\n")
	goldens := testmodels.Goldens(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.Dial(context.Background(), td.socket)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			g := goldens[i%len(goldens)]
			var streamed string
			var fn func(client.Delta) error
			if i%2 == 0 { // half stream, half take the whole result
				fn = func(d client.Delta) error { streamed += d.Text; return nil }
			}
			res, err := c.Generate(context.Background(), client.Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens()}, fn)
			if err != nil {
				errs <- err
				return
			}
			if !slices.Equal(res.Tokens, g.OutputTokens) || res.Text != g.Text || (fn != nil && streamed != g.Text) {
				errs <- fmt.Errorf("client %d %q: got %d tokens %q", i, g.Prompt, len(res.Tokens), res.Text)
			}
			if fn == nil && !slices.Equal(res.PromptTokens, g.PromptTokens) {
				errs <- fmt.Errorf("client %d: prompt tokens %v", i, res.PromptTokens)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	td.waitIdle(t)
}

func TestCancelAndHangUpFreeBlocks(t *testing.T) {
	td := startDaemon(t, "")
	c := td.dial(t)
	long := client.Request{Prompt: "Once upon a time", MaxTokens: 400}

	// Cancel through the socket by request id, from another connection.
	started := make(chan uint64, 1)
	done := make(chan *client.Result, 1)
	go func() {
		res, _ := c.Generate(context.Background(), long, func(d client.Delta) error {
			select {
			case started <- d.RequestID:
			default:
			}
			return nil
		})
		done <- res
	}()
	id := <-started
	if err := td.dial(t).Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.FinishReason != "cancelled" {
		t.Fatalf("finish %q after cancel", res.FinishReason)
	}
	td.waitIdle(t)

	// Context cancellation in the client cancels on the daemon.
	ctx, cancel := context.WithCancel(context.Background())
	_, err := c.Generate(ctx, long, func(client.Delta) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	td.waitIdle(t)

	// A client that hangs up mid-stream has its requests cancelled.
	hang, err := client.Dial(context.Background(), td.socket)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		_, _ = hang.Generate(context.Background(), long, func(client.Delta) error {
			select {
			case got <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	<-got
	hang.Close()
	td.waitIdle(t)
	// The first cancel was acknowledged, so it must have ended that request
	// (TestCancelReplyMatchesOutcome holds the engine to that). The other two
	// race the request's own end: on a loaded machine a 400-token request
	// can finish before the client's cancel or hang-up arrives. Each request
	// still ended exactly once, and nothing is left running (waitIdle).
	// The finish is counted just after the blocks are freed, so an idle
	// engine can still be a moment short of the third count.
	f := td.d.defaultModel().Engine.Stats().Finished
	for deadline := time.Now().Add(5 * time.Second); f["cancelled"]+f["length"]+f["stop"] < 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		f = td.d.defaultModel().Engine.Stats().Finished
	}
	if f["cancelled"] < 1 || f["cancelled"]+f["length"]+f["stop"] != 3 {
		t.Fatalf("finished %v, want 3 requests with at least 1 cancelled", f)
	}
	if f["cancelled"] != 3 {
		t.Logf("finished %v: a cancel came after its request's end", f)
	}
}

// rawConn speaks frames by hand, for bad input.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, sock string, hello bool) *rawConn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &rawConn{c: c, br: bufio.NewReader(c)}
	if hello {
		r.send(t, &wire.Hello{Type: wire.TypeHello, ID: 1, Version: wire.ProtocolVersion})
		if h := r.read(t); h.Type != wire.TypeHello {
			t.Fatalf("hello reply %+v", h)
		}
	}
	return r
}

func (r *rawConn) send(t *testing.T, v any) {
	t.Helper()
	if err := wire.WriteFrame(r.c, v); err != nil {
		t.Fatal(err)
	}
}

func (r *rawConn) sendRaw(t *testing.T, b []byte) {
	t.Helper()
	if _, err := r.c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func (r *rawConn) read(t *testing.T) wire.ErrorFrame {
	t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	body, err := wire.ReadFrame(r.br, 1<<20)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var e wire.ErrorFrame
	if err := wire.Decode(body, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// closed reports whether the server closed the connection (after any frames).
func (r *rawConn) closed(t *testing.T) bool {
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, err := wire.ReadFrame(r.br, 1<<20); err != nil {
			return true
		}
	}
}

func frameOf(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

func TestBadInputGetsClearErrors(t *testing.T) {
	td := startDaemon(t, "")
	expect := func(r *rawConn, code string) {
		t.Helper()
		if e := r.read(t); e.Type != wire.TypeError || e.Code != code {
			t.Fatalf("got %+v, want error %s", e, code)
		}
	}
	// A frame that is not msgpack, then one with a wrong-typed field, then an
	// unknown type: each gets an error and the connection stays usable.
	r := dialRaw(t, td.socket, true)
	r.sendRaw(t, frameOf([]byte("this is not msgpack")))
	expect(r, wire.CodeInvalidArgument)
	r.send(t, map[string]any{"type": "submit", "id": 5, "max_tokens": "lots"})
	expect(r, wire.CodeInvalidArgument)
	r.send(t, map[string]any{"type": "teleport", "id": 6})
	expect(r, wire.CodeInvalidArgument)
	r.send(t, &wire.Submit{Type: wire.TypeSubmit, ID: 7, Tokens: []int{1, 99999}})
	expect(r, wire.CodeInvalidArgument)
	r.send(t, map[string]any{"type": "health", "id": 8, "some_future_field": true})
	if h := r.read(t); h.Type != wire.TypeHealth {
		t.Fatalf("health with an unknown field: %+v", h)
	}

	// Version mismatch: an error, then a clean close.
	r = dialRaw(t, td.socket, false)
	r.send(t, &wire.Hello{Type: wire.TypeHello, ID: 1, Version: 99})
	expect(r, wire.CodeInvalidArgument)
	if !r.closed(t) {
		t.Fatal("connection stayed open after a version mismatch")
	}
	// Oversized frame: an error, then a close.
	r = dialRaw(t, td.socket, true)
	r.sendRaw(t, binary.BigEndian.AppendUint32(nil, 64<<20))
	expect(r, wire.CodeInvalidArgument)
	if !r.closed(t) {
		t.Fatal("connection stayed open after an oversized frame")
	}
	// Truncated frame: the server waits for the rest; a hang-up ends it cleanly.
	r = dialRaw(t, td.socket, true)
	r.sendRaw(t, append(binary.BigEndian.AppendUint32(nil, 100), 0x81, 0xa4))
	r.c.Close()

	// Meanwhile the daemon keeps serving.
	res, err := td.dial(t).Generate(context.Background(), client.Request{Prompt: "Tom", MaxTokens: 3}, nil)
	if err != nil || len(res.Tokens) != 3 {
		t.Fatalf("daemon stopped serving: %v %+v", err, res)
	}
}

func TestBurstAgainstQueueLimit(t *testing.T) {
	td := startDaemon(t, "[engine]\nmax_queue = 100\nmax_num_seqs = 8\n[server]\nmax_requests_per_user = 0\n")
	c := td.dial(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Generate(context.Background(), client.Request{Prompt: fmt.Sprintf("Lily %d", i), MaxTokens: 4}, nil)
			key := "completed"
			switch {
			case errors.Is(err, client.ErrQueueFull):
				key = "queue_full"
			case err != nil:
				key = "error: " + err.Error()
			case res.FinishReason != "length" && res.FinishReason != "stop":
				key = "finish " + res.FinishReason
			}
			mu.Lock()
			outcomes[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if outcomes["completed"]+outcomes["queue_full"] != 1000 || outcomes["queue_full"] == 0 || outcomes["completed"] < 100 {
		t.Fatalf("outcomes %v", outcomes)
	}
	t.Logf("burst of 1000: %v", outcomes)
	td.waitIdle(t)
}

func TestReloadAppliesLiveAndRejectsBadFiles(t *testing.T) {
	td := startDaemon(t, "[engine]\nmax_num_seqs = 8\n")
	c := td.dial(t)
	cfgOf := func() *wire.StatsReport {
		s, err := c.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	waitFor := func(what string, ok func(*wire.StatsReport) bool) *wire.StatsReport {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := cfgOf()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: stats %+v", what, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// An editor's atomic save: write a temp file, rename it over the config.
	save := func(text string) {
		tmp := td.d.flags.Config + ".tmp"
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, td.d.flags.Config); err != nil {
			t.Fatal(err)
		}
	}
	save("[engine]\nmax_num_seqs = 3\npolicy = \"priority\"\nblock_size = 8\nkv_cache_type = \"f32\"\nquant_dot = \"int8\"\n")
	// The engine takes the new policy at its next turn, the limits at once:
	// wait for both (a busy machine saw the one before the other).
	s := waitFor("valid edit", func(s *wire.StatsReport) bool { return s.Config.MaxNumSeqs == 3 && s.Policy == "priority" })
	if fmt.Sprint(s.RestartNeeded) != "[engine.block_size engine.kv_cache_type engine.quant_dot]" {
		t.Fatalf("after reload: policy %v, restart_needed %v", s.Policy, s.RestartNeeded)
	}
	save("[engine]\nmax_num_seqs = -4\npolicy = \"random\"\nkv_cache_type = \"q4\"\nquant_dot = \"int4\"\n")
	s = waitFor("invalid edit", func(s *wire.StatsReport) bool { return s.ReloadErrors == 1 })
	if s.Config.MaxNumSeqs != 3 || !strings.Contains(s.LastReloadError, "kv_cache_type") || !strings.Contains(s.LastReloadError, "quant_dot") {
		t.Fatalf("bad file changed the config: %v", s)
	}
	// The old config keeps serving.
	if _, err := c.Generate(context.Background(), client.Request{Prompt: "Tom", MaxTokens: 2}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestShutdownDrainsThenCancels(t *testing.T) {
	td := startDaemon(t, "drain_timeout = \"50ms\"\n")
	c := td.dial(t)
	first := make(chan struct{})
	res := make(chan *client.Result, 1)
	go func() {
		var once sync.Once
		r, _ := c.Generate(context.Background(), client.Request{Prompt: "Once", MaxTokens: 500},
			func(client.Delta) error { once.Do(func() { close(first) }); return nil })
		res <- r
	}()
	<-first
	td.stop()
	r := <-res
	// Finished within the drain (stop or length: without the race detector
	// stories260K reaches EOS in under 50 ms), or cancelled after it.
	if r == nil || (r.FinishReason != "cancelled" && r.FinishReason != "length" && r.FinishReason != "stop") {
		t.Fatalf("request after shutdown: %+v", r)
	}
	if _, err := os.Stat(td.socket); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestBreakingOutOfStreamCancels(t *testing.T) {
	td := startDaemon(t, "")
	c := td.dial(t)
	n := 0
	for d, err := range c.Stream(context.Background(), client.Request{Prompt: "Once upon a time", MaxTokens: 400}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 || d.Text == "" {
			break
		}
	}
	td.waitIdle(t)
	if got := td.d.defaultModel().Engine.Stats().Finished["cancelled"]; got != 1 {
		t.Fatalf("%d cancelled, want 1", got)
	}
}

func TestIdleSleepAndWake(t *testing.T) {
	td := startDaemon(t, "sleep_after = \"300ms\"\nsleep_release_weights = true\n")
	c := td.dial(t)
	g := testmodels.Goldens(t)[0]
	if _, err := c.Generate(context.Background(), client.Request{Prompt: g.Prompt, MaxTokens: 5}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := c.Health(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if h.State == "sleeping" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never slept: state %s", h.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err := c.Generate(context.Background(), client.Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens()}, nil)
	if err != nil || !slices.Equal(res.Tokens, g.OutputTokens) {
		t.Fatalf("after wake: %v", err)
	}
	s, _ := c.Stats(context.Background())
	if s.State != "ready" || s.Wakes != 1 || s.Sleeps != 1 {
		t.Fatalf("stats after wake: state %v sleeps %v wakes %v", s.State, s.Sleeps, s.Wakes)
	}
	t.Logf("wake took %v s", s.LastWakeSeconds)
}
