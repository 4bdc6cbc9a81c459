package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakes: a loader whose models cost what the table says and record their
// loads and closes.
type fakeLoader struct {
	mu     sync.Mutex
	bytes  map[string]int64
	fail   map[string]error
	gate   chan struct{} // when not nil, Start waits for it
	loads  map[string]int
	closed map[string]int
	live   atomic.Int64 // bytes of started, unclosed instances
}

func newFakeLoader(bytes map[string]int64) *fakeLoader {
	return &fakeLoader{bytes: bytes, fail: map[string]error{}, loads: map[string]int{}, closed: map[string]int{}}
}

type fakePending struct {
	l    *fakeLoader
	name string
	n    int64
}

type fakeInstance struct {
	p    *fakePending
	once sync.Once
}

func (l *fakeLoader) load(_ context.Context, s Spec) (Pending, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.fail[s.Name]; err != nil {
		return nil, err
	}
	l.loads[s.Name]++
	return &fakePending{l: l, name: s.Name, n: l.bytes[s.Name]}, nil
}

func (p *fakePending) Bytes() int64 { return p.n }
func (p *fakePending) Abort()       {}
func (p *fakePending) Start(context.Context) (Instance, error) {
	if p.l.gate != nil {
		<-p.l.gate
	}
	p.l.live.Add(p.n)
	return &fakeInstance{p: p}, nil
}

func (f *fakeInstance) Close() error {
	f.once.Do(func() {
		f.p.l.live.Add(-f.p.n)
		f.p.l.mu.Lock()
		f.p.l.closed[f.p.name]++
		f.p.l.mu.Unlock()
	})
	return nil
}

func (l *fakeLoader) count(m map[string]int, name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return m[name]
}

func specs(names ...string) []Spec {
	var out []Spec
	for _, n := range names {
		out = append(out, Spec{Name: n, Path: "/models/" + n + ".gguf"})
	}
	return out
}

func newManager(t *testing.T, cfg Config, l *fakeLoader) *Manager {
	t.Helper()
	cfg.Load = l.load
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func acquire(t *testing.T, m *Manager, name string) *Lease {
	t.Helper()
	l, err := m.Acquire(context.Background(), name, nil)
	if err != nil {
		t.Fatalf("acquire %s: %v", name, err)
	}
	return l
}

func stateOf(t *testing.T, m *Manager, name string) State {
	t.Helper()
	i, err := m.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return i.State
}

// TestConcurrentFirstRequestsLoadOnce: 16 requests for an unloaded model
// share one load and all get it.
func TestConcurrentFirstRequestsLoadOnce(t *testing.T) {
	l := newFakeLoader(map[string]int64{"a": 10})
	l.gate = make(chan struct{})
	m := newManager(t, Config{Specs: specs("a")}, l)
	var wg sync.WaitGroup
	leases := make(chan *Lease, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := m.Acquire(context.Background(), "a", nil)
			if err != nil {
				t.Error(err)
				return
			}
			leases <- lease
		}()
	}
	for stateOf(t, m, "a") != Loading {
		time.Sleep(time.Millisecond)
	}
	close(l.gate)
	wg.Wait()
	close(leases)
	var first Instance
	for lease := range leases {
		if first == nil {
			first = lease.Instance
		}
		if lease.Instance != first {
			t.Error("two instances of one model")
		}
		lease.Release()
	}
	if n := l.count(l.loads, "a"); n != 1 {
		t.Errorf("%d loads, want 1", n)
	}
}

// TestLeastRecentlyUsedIdleModelGivesWay: under a memory budget the
// idle model used longest ago unloads for a new one; one in use never
// does, and a request waits for room until its deadline, then is told
// what holds the memory.
func TestLeastRecentlyUsedIdleModelGivesWay(t *testing.T) {
	l := newFakeLoader(map[string]int64{"a": 40 << 20, "b": 40 << 20, "c": 40 << 20})
	now := time.Unix(1000, 0)
	var clock sync.Mutex
	tick := func() time.Time { clock.Lock(); defer clock.Unlock(); now = now.Add(time.Second); return now }
	m := newManager(t, Config{Specs: specs("a", "b", "c"), MemoryBytes: 100 << 20, Now: tick}, l)
	acquire(t, m, "a").Release()
	acquire(t, m, "b").Release()
	acquire(t, m, "a").Release() // b is now the least recently used
	acquire(t, m, "c").Release()
	if stateOf(t, m, "b") != Available || stateOf(t, m, "a") != Loaded || stateOf(t, m, "c") != Loaded {
		t.Fatalf("after c: a %v b %v c %v, want b unloaded", stateOf(t, m, "a"), stateOf(t, m, "b"), stateOf(t, m, "c"))
	}
	la, lc := acquire(t, m, "a"), acquire(t, m, "c") // both busy
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := m.Acquire(ctx, "b", nil)
	if !errors.Is(err, ErrNoRoom) || !strings.Contains(err.Error(), "a (40 MiB, 1 requests)") {
		t.Fatalf("b while a and c are busy: %v, want ErrNoRoom naming a", err)
	}
	if l.live.Load() > 100<<20 {
		t.Fatalf("%d bytes live over the budget", l.live.Load())
	}
	got := make(chan error, 1)
	go func() {
		lb, err := m.Acquire(context.Background(), "b", nil)
		if err == nil {
			lb.Release()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("b loaded while a and c were busy: %v", err)
	default:
	}
	la.Release() // a, now idle, gives way
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if stateOf(t, m, "a") != Available || stateOf(t, m, "c") != Loaded {
		t.Errorf("a %v c %v: want a unloaded for b, c kept (busy)", stateOf(t, m, "a"), stateOf(t, m, "c"))
	}
	lc.Release()
	// b and c loaded, both busy: a request for a without a deadline of its
	// own waits RoomWait, then is told.
	lb, lc := acquire(t, m, "b"), acquire(t, m, "c")
	m.mu.Lock()
	m.cfg.RoomWait = 30 * time.Millisecond
	m.mu.Unlock()
	if _, err := m.Acquire(context.Background(), "a", nil); !errors.Is(err, ErrNoRoom) {
		t.Errorf("a request without a deadline while every model is busy: %v, want ErrNoRoom after RoomWait", err)
	}
	lb.Release()
	lc.Release()
	big := newFakeLoader(map[string]int64{"huge": 200 << 20})
	m2 := newManager(t, Config{Specs: specs("huge"), MemoryBytes: 100 << 20}, big)
	if _, err := m2.Acquire(context.Background(), "huge", nil); !errors.Is(err, ErrNoRoom) || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a model over the whole budget: %v", err)
	}
}

// TestMaxLoadedAndPinning: max_loaded_models bounds the count; a pinned
// model (keep_alive -1) never gives way, nor does a request's keep_alive
// unpin it.
func TestMaxLoadedAndPinning(t *testing.T) {
	l := newFakeLoader(map[string]int64{"p": 1, "a": 1, "b": 1})
	forever := time.Duration(-1)
	s := specs("p", "a", "b")
	s[0].KeepAlive = &forever
	m := newManager(t, Config{Specs: s, MaxLoaded: 2}, l)
	zero := time.Duration(0)
	lp, err := m.Acquire(context.Background(), "p", &zero)
	if err != nil {
		t.Fatal(err)
	}
	lp.Release()
	acquire(t, m, "a").Release()
	acquire(t, m, "b").Release()
	if stateOf(t, m, "p") != Loaded || stateOf(t, m, "a") != Available || stateOf(t, m, "b") != Loaded {
		t.Fatalf("p %v a %v b %v: want p pinned, a out for b", stateOf(t, m, "p"), stateOf(t, m, "a"), stateOf(t, m, "b"))
	}
	if n := len(m.Loaded()); n != 2 {
		t.Errorf("%d loaded, max 2", n)
	}
	// An explicit unload of the pinned model, then a request: pinned again.
	if ok, err := m.Unload("p"); !ok || err != nil || stateOf(t, m, "p") != Available {
		t.Fatalf("unload p: %v %v %v", ok, err, stateOf(t, m, "p"))
	}
	acquire(t, m, "p").Release()
	if stateOf(t, m, "p") != Loaded {
		t.Error("a pinned model reloaded after an unload did not stay")
	}
}

// TestKeepAlive: 0 unloads as the last request ends (not before: a
// running request keeps it), a duration after that long idle, negative
// never; a request's keep_alive replaces the default.
func TestKeepAlive(t *testing.T) {
	l := newFakeLoader(map[string]int64{"a": 1, "b": 1, "c": 1})
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	m := newManager(t, Config{Specs: specs("a", "b", "c"), Now: clock}, l)
	zero, forever := time.Duration(0), time.Duration(-1)
	l1, _ := m.Acquire(context.Background(), "a", &zero)
	l2, _ := m.Acquire(context.Background(), "a", &zero)
	l1.Release()
	if stateOf(t, m, "a") != Loaded {
		t.Fatal("keep_alive 0 unloaded a model a request still runs on")
	}
	l2.Release()
	if stateOf(t, m, "a") != Available {
		t.Fatal("keep_alive 0: still loaded once idle")
	}
	acquire(t, m, "b").Release() // the default, 5m
	lc, _ := m.Acquire(context.Background(), "c", &forever)
	lc.Release()
	advance(DefaultKeepAlive - time.Second)
	m.Tick()
	if stateOf(t, m, "b") != Loaded {
		t.Fatal("b unloaded before its keep-alive")
	}
	advance(time.Second)
	m.Tick()
	if stateOf(t, m, "b") != Available || stateOf(t, m, "c") != Loaded {
		t.Fatalf("after 5m: b %v c %v, want b unloaded, c kept (keep_alive -1)", stateOf(t, m, "b"), stateOf(t, m, "c"))
	}
	if ok, err := m.Unload("c"); !ok || err != nil || stateOf(t, m, "c") != Available {
		t.Errorf("unload c: %v %v %v", ok, err, stateOf(t, m, "c"))
	}
}

// TestFailedLoadIsReported: a model that fails to load is an ErrLoad with
// the loader's words, listed as failed, and the others keep serving; the
// next request tries again.
func TestFailedLoadIsReported(t *testing.T) {
	l := newFakeLoader(map[string]int64{"good": 1, "bad": 1})
	l.fail["bad"] = errors.New("gguf: bad magic")
	m := newManager(t, Config{Specs: specs("good", "bad")}, l)
	lg := acquire(t, m, "good")
	_, err := m.Acquire(context.Background(), "bad", nil)
	if !errors.Is(err, ErrLoad) || !strings.Contains(err.Error(), "bad magic") {
		t.Fatalf("bad: %v", err)
	}
	info, _ := m.Get("bad")
	if info.State != Failed || info.Err == nil {
		t.Errorf("bad listed as %v (%v)", info.State, info.Err)
	}
	lg.Release()
	if stateOf(t, m, "good") != Loaded {
		t.Error("a failed load took another model down")
	}
	l.mu.Lock()
	delete(l.fail, "bad")
	l.mu.Unlock()
	acquire(t, m, "bad").Release()
}

// TestNames: aliases, Ollama's ":latest" tag either way, any case; the
// default for a request without a model; unknown names are ErrNotFound.
func TestNames(t *testing.T) {
	l := newFakeLoader(map[string]int64{"llama3.2": 1, "qwen": 1})
	s := specs("llama3.2", "qwen")
	s[1].Aliases = []string{"qwen2.5:0.5b"}
	m := newManager(t, Config{Specs: s, Default: "qwen"}, l)
	for name, want := range map[string]string{"llama3.2": "llama3.2", "llama3.2:latest": "llama3.2", "LLaMA3.2": "llama3.2",
		"qwen2.5:0.5b": "qwen", "qwen:latest": "qwen", "": "qwen"} {
		lease, err := m.Acquire(context.Background(), name, nil)
		if err != nil || lease.Name != want {
			t.Errorf("%q: %v %v, want %s", name, lease, err, want)
			continue
		}
		lease.Release()
	}
	if _, err := m.Acquire(context.Background(), "nope", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if _, err := New(Config{Specs: []Spec{{Name: "a b"}}, Load: l.load}); err == nil {
		t.Error("a name with a space was taken")
	}
	if _, err := New(Config{Specs: []Spec{{Name: "a"}, {Name: "b", Aliases: []string{"A"}}}, Load: l.load}); err == nil {
		t.Error("an alias that is another model's name was taken")
	}
}

// TestModelsDirectory: a file copied in is a model, a configured path
// keeps its configured name, a removed file's model unloads when its last
// request ends and leaves the list.
func TestModelsDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("small.gguf")
	write("notes.txt")
	write("chat.gguf")
	l := newFakeLoader(map[string]int64{"small": 1, "tiny": 1, "mine": 1})
	m := newManager(t, Config{Dir: dir, Specs: []Spec{{Name: "mine", Path: filepath.Join(dir, "chat.gguf")}}}, l)
	names := func() (out []string) {
		for _, i := range m.List() {
			out = append(out, i.Name)
		}
		return out
	}
	if got := strings.Join(names(), ","); got != "mine,small" {
		t.Fatalf("models %s, want mine,small", got)
	}
	write("tiny.gguf")
	lt := acquire(t, m, "tiny") // found without waiting for a scan
	if err := os.Remove(filepath.Join(dir, "tiny.gguf")); err != nil {
		t.Fatal(err)
	}
	m.Tick()
	if stateOf(t, m, "tiny") != Loaded {
		t.Fatal("a removed model unloaded under a running request")
	}
	lt.Release()
	if got := strings.Join(names(), ","); got != "mine,small" {
		t.Errorf("after removing tiny.gguf: %s", got)
	}
	if l.count(l.closed, "tiny") != 1 {
		t.Error("tiny was not unloaded")
	}
}

// TestCloseEndsEverything: Close unloads every model and refuses new
// requests.
func TestCloseEndsEverything(t *testing.T) {
	l := newFakeLoader(map[string]int64{"a": 5, "b": 5})
	m := newManager(t, Config{Specs: specs("a", "b")}, l)
	acquire(t, m, "a")
	acquire(t, m, "b").Release()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if l.live.Load() != 0 {
		t.Errorf("%d bytes live after Close", l.live.Load())
	}
	if _, err := m.Acquire(context.Background(), "a", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestLargeModelsDirectory: 10,000 files make 10,000 models in one scan
// (finding a name was a walk over every model, so a scan was quadratic:
// 30,000 files never became ready), lookups of names that do not exist
// list the directory again only when it changed (each one rescanned it,
// under the manager's lock), and a file added is found at its first
// lookup.
func TestLargeModelsDirectory(t *testing.T) {
	dir := t.TempDir()
	const n = 10000
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%05d.gguf", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := newFakeLoader(map[string]int64{"new": 1})
	m := newManager(t, Config{Dir: dir}, l)
	if got := len(m.List()); got != n {
		t.Fatalf("%d models, want %d", got, n)
	}
	if _, err := m.Get("M00042"); err != nil { // case folded
		t.Fatal(err)
	}
	before := m.scans.Load()
	for i := range 1000 {
		if _, err := m.Acquire(context.Background(), fmt.Sprintf("missing%d", i), nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing%d: %v", i, err)
		}
	}
	if got := m.scans.Load() - before; got != 0 {
		t.Fatalf("1000 lookups of unknown names listed an unchanged directory %d times", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "new.gguf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	acquire(t, m, "new").Release()
	if got := m.scans.Load() - before; got != 1 {
		t.Fatalf("finding a new file took %d listings, want 1", got)
	}
}
