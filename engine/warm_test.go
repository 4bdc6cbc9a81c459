package engine

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/cpu"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/tokenizer"
)

// warmEngine runs an engine over a small pool whose prefix cache lives in
// file under identity; stop ends its loop (which saves the cache).
func warmEngine(t *testing.T, m *model.Model, file, identity string, maxBytes ...int64) (*Engine, func()) {
	t.Helper()
	o := Options{NumBlocks: 64, BlockSize: 4, CacheFile: file, CacheIdentity: identity}
	if len(maxBytes) > 0 {
		o.CacheMaxBytes = maxBytes[0]
	}
	return warmEngineWith(t, m, o)
}

// warmEngineWith is warmEngine with o's pool and cache (its model and
// backend filled in).
func warmEngineWith(t *testing.T, m *model.Model, o Options) (*Engine, func()) {
	t.Helper()
	be, err := cpu.New(m, backend.Options{NumBlocks: o.NumBlocks, BlockSize: o.BlockSize, Windowed: o.Windowed, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	o.Model, o.Backend = m, be
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.afterStep = func() {
		if err := e.pool.Check(); err != nil {
			t.Errorf("KV pool: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = e.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-e.Done()
			be.Close()
		}
	}
	t.Cleanup(stop)
	return e, stop
}

// TestPinsAndSavedPrefixCache: a pinned prefix is prefilled at once and
// survives a load that evicts everything else; the prefix cache, saved at
// sleep and at shutdown, comes back after the wake and in a new engine,
// with the tokens unchanged; a file of another identity, or a damaged one,
// is ignored.
func TestPinsAndSavedPrefixCache(t *testing.T) {
	m := loadModel(t, "gguf")
	g := testmodels.Goldens(t)[2] // 13 prompt tokens: 3 full blocks of 4
	req := Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens(), StopTokenIDs: g.StopTokenIDs()}
	prefix, err := m.Tokenizer.Tokenize(context.Background(), g.Prompt, tokenizer.Options{AddSpecial: true})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "prefix-cache")
	stale := filepath.Join(filepath.Dir(file), ".prefix-cache-123") // a save killed mid-write
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, stop := warmEngine(t, m, file, "model-a")
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a stale temporary file survived the start: %v", err)
	}
	e.SetPins([][]int{prefix[:12]})
	for deadline := time.Now().Add(10 * time.Second); e.Stats().KVBlocksPinned != 3; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("the pin never landed: %+v", e.Stats())
		}
	}
	// Requests that need nearly every unpinned block, twice, evict all but the pin.
	for i := range 2 {
		run(t, e, Request{Prompt: string(rune('A'+i)) + " dog went to the market", MaxTokens: 220, IgnoreEOS: true})
	}
	if s := e.Stats(); s.KVBlocksPinned != 3 || s.PrefixQueries == 0 {
		t.Fatalf("after the load: %+v", s)
	}
	check := func(who string, e *Engine, want int) {
		t.Helper()
		r := run(t, e, req)
		checkGolden(t, g, r)
		if r.done.Usage.CachedPromptTokens != want {
			t.Errorf("%s: %d prompt tokens cached, want %d", who, r.done.Usage.CachedPromptTokens, want)
		}
	}
	check("pinned, after an evicting load", e, 12)
	e.Sleep(false)
	for !e.Sleeping() {
		runtime.Gosched()
	}
	check("first request after a wake (the cache saved at sleep)", e, 12)
	stop()

	e2, stop2 := warmEngine(t, m, file, "model-a")
	check("a new engine (the cache saved at shutdown)", e2, 12)
	stop2()
	_, stop3 := warmEngine(t, m, file, "model-b")
	stop3() // saves its own (empty of the prompt) cache over the file
	e4, stop4 := warmEngine(t, m, file, "model-a")
	check("after another identity's engine wrote the file", e4, 0)
	stop4()

	// Damage a byte in the middle of a good file: ignored, nothing loaded.
	e5, stop5 := warmEngine(t, m, file, "model-a")
	check("warming the file again", e5, 12)
	stop5()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e6, _ := warmEngine(t, m, file, "model-a")
	if s := e6.Stats(); s.KVBlocksCached != 0 {
		t.Errorf("a damaged file left %d cached blocks", s.KVBlocksCached)
	}
	check("a damaged file", e6, 0)
}

// TestSavedCacheBound: a bounded save keeps only as many blocks as fit,
// the most recently used.
func TestSavedCacheBound(t *testing.T) {
	m := loadModel(t, "gguf")
	file := filepath.Join(t.TempDir(), "prefix-cache")
	e, stop := warmEngine(t, m, file, "m")
	run(t, e, Request{Prompt: "Once upon a time there was a dog who liked to run in the park with his friends", MaxTokens: 4})
	run(t, e, Request{Prompt: "Lily and Tom went to the market to buy some bread and milk for their mother", MaxTokens: 4})
	blockBytes := int64(e.backend.(backend.BlockStore).BlockBytes())
	cached := e.Stats().KVBlocksCached
	stop()
	e2, stop2 := warmEngine(t, m, file, "m", 2*blockBytes)
	stop2() // saves at most 2 blocks
	if cached < 4 || e2.Stats().KVBlocksCached != cached {
		t.Fatalf("setup: %d cached, then %d loaded unbounded", cached, e2.Stats().KVBlocksCached)
	}
	e3, _ := warmEngine(t, m, file, "m")
	if got := e3.Stats().KVBlocksCached; got != 2 {
		t.Errorf("after a save bounded to 2 blocks: %d cached", got)
	}
	// The kept ones are the last prompt's (the most recently used).
	r := run(t, e3, Request{Prompt: "Lily and Tom went to the market to buy some bread and milk for their mother", MaxTokens: 4})
	if r.done.Usage.CachedPromptTokens == 0 {
		t.Error("the most recently used blocks were not the ones kept")
	}
}

// TestUntrustedCacheFilesAreIgnored: a good cache file that another user
// could have written (group- or world-writable, another owner, a link, or
// in a directory others can write) is not read: the checksum proves a file
// whole, not whose it is, and a planted NaN K/V file answered requests.
func TestUntrustedCacheFilesAreIgnored(t *testing.T) {
	m := loadModel(t, "gguf")
	g := testmodels.Goldens(t)[2]
	req := Request{Prompt: g.Prompt, MaxTokens: 4}
	dir := t.TempDir()
	file := filepath.Join(dir, "prefix-cache")
	e, stop := warmEngine(t, m, file, "model-a")
	run(t, e, req)
	stop()
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cached := func() int {
		e, stop := warmEngine(t, m, file, "model-a")
		defer stop()
		return e.Stats().KVBlocksCached
	}
	if cached() == 0 {
		t.Fatal("the daemon's own file was not read")
	}
	restore := func() {
		_ = os.Remove(file)
		if err := os.WriteFile(file, good, 0o600); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(dir, 0o700)
	}
	for name, spoil := range map[string]func(){
		"group-writable file": func() { _ = os.Chmod(file, 0o620) },
		"world-writable dir":  func() { _ = os.Chmod(dir, 0o777) },
		"a link": func() {
			other := filepath.Join(t.TempDir(), "planted")
			_ = os.WriteFile(other, good, 0o600)
			_ = os.Remove(file)
			_ = os.Symlink(other, file)
		},
		"another owner": func() { _ = os.Chown(file, 4321, 4321) },
	} {
		if name == "another owner" && os.Geteuid() != 0 {
			continue // giving a file away needs root
		}
		restore()
		spoil()
		if n := cached(); n != 0 {
			t.Errorf("%s: %d blocks adopted", name, n)
		}
	}
}
