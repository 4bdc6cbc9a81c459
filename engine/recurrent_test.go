package engine

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/cpu"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestRecurrentStatesFreed: a hybrid model's per-sequence states are
// dropped once their sequences stop running (finished, cancelled,
// preempted): the backend never holds more than the running sequences
// and those that just ended, and none after the engine stops.
func TestRecurrentStatesFreed(t *testing.T) {
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch2", "tiny-qwen35.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const running = 2
	e := startEngine(t, m, engineOpts{blocks: 9, blockSize: 4, noStart: true,
		sched: sched.Config{MaxNumSeqs: running, MaxNumBatchedTokens: 8}})
	b := e.backend.(*cpu.Backend)
	var mu sync.Mutex
	most := 0
	check := e.afterStep
	e.afterStep = func() {
		check()
		mu.Lock()
		most = max(most, b.States())
		mu.Unlock()
	}
	submit := func() []*Stream {
		var streams []*Stream
		for i := range 8 {
			st, err := e.Submit(context.Background(), Request{Tokens: []int{1 + i, 20, 30 + i, 40, 50}, MaxTokens: 12 + i})
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, st)
		}
		return streams
	}
	// Round one: all queued before the loop starts, so they contend for
	// the pool at once and the schedule (and its preemptions) does not
	// depend on timing. Round two: a third cancelled as they run.
	first := submit()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = e.Run(ctx) }()
	preempted := 0
	for round, streams := range [][]*Stream{first, nil} {
		if round == 1 {
			streams = submit()
		}
		for i, st := range streams {
			if round == 1 && i%3 == 0 {
				_ = e.Cancel(st.ID())
			}
			_, _, done, err := st.Wait(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if round == 0 {
				preempted += done.Preemptions
			}
		}
	}
	cancel()
	select {
	case <-e.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the engine did not stop")
	}
	if n, st := b.States(), e.Stats(); n != 0 || st.RecurrentStates != 0 {
		t.Errorf("%d recurrent states (stats say %d) after every request ended", n, st.RecurrentStates)
	}
	if most > 2*running {
		t.Errorf("%d recurrent states live at once with %d sequences running: ended ones are kept", most, running)
	}
	if preempted == 0 {
		t.Error("no preemption in the tiny pool's first round")
	}
	t.Logf("at most %d states live; %d preemptions", most, preempted)
}

// TestRecurrentPrefixResume: a second turn (the first's prompt and answer,
// then more) resumes from the state kept where the cached prefix ends and
// writes what a cold run writes; with the kept states evicted it runs cold
// and writes the same.
func TestRecurrentPrefixResume(t *testing.T) {
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch2", "tiny-qwen35.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	run := func(e *Engine, prompt []int, n int) ([]int, int) { return generate(t, e, prompt, n) }
	engine := func(snapshots int, caching bool) *Engine {
		b, err := cpu.New(m, backend.Options{NumBlocks: 64, BlockSize: 16, Threads: 2, MaxSnapshots: snapshots})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		e, err := New(Options{Model: m, Backend: b, NumBlocks: 64, BlockSize: 16, DisablePrefixCaching: !caching})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = e.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-e.Done() })
		return e
	}
	first := make([]int, 40)
	for i := range first {
		first[i] = 100 + 7*i
	}
	cold := engine(0, false)
	answer, _ := run(cold, first, 20)
	second := append(append(append([]int(nil), first...), answer...), 11, 12, 13, 14, 15)
	want, _ := run(cold, second, 12)

	warm := engine(0, true)
	run(warm, first, 20)
	got, cached := run(warm, second, 12)
	if st := warm.Stats(); st.RecurrentSnapshots == 0 {
		t.Error("stats count no kept states")
	}
	if cached != 48 || !slices.Equal(got, want) {
		t.Errorf("second turn: %d cached tokens (want 48: the first turn's three full blocks), tokens %v, cold %v", cached, got, want)
	}
	evicting := engine(1, true) // one kept state: another prompt's evicts the first's
	run(evicting, first, 20)
	run(evicting, []int{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}, 4)
	got, cached = run(evicting, second, 12)
	if cached != 0 || !slices.Equal(got, want) {
		t.Errorf("evicted: %d cached tokens (want 0), tokens %v, cold %v", cached, got, want)
	}
}

// TestRecurrentSavedStates: a hybrid's kept states are saved with the
// prefix cache and read back, so that after a restart the second turn
// resumes from the first's cached blocks (48 tokens, as in
// TestRecurrentPrefixResume) and writes what a cold run writes; without
// the states section the blocks alone could not be resumed.
func TestRecurrentSavedStates(t *testing.T) {
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch2", "tiny-qwen35.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	run := func(e *Engine, prompt []int, n int) ([]int, int) { return generate(t, e, prompt, n) }
	first := make([]int, 40)
	for i := range first {
		first[i] = 100 + 7*i
	}
	o := Options{NumBlocks: 64, BlockSize: 16, CacheFile: filepath.Join(t.TempDir(), "prefix-cache"), CacheIdentity: "qwen35"}
	cold := o
	cold.CacheFile, cold.DisablePrefixCaching = "", true
	ce, _ := warmEngineWith(t, m, cold)
	answer, _ := run(ce, first, 20)
	second := append(append(append([]int(nil), first...), answer...), 11, 12, 13, 14, 15)
	want, _ := run(ce, second, 12)

	e1, stop := warmEngineWith(t, m, o)
	run(e1, first, 20)
	kept := e1.Stats().RecurrentSnapshots
	stop()
	e2, _ := warmEngineWith(t, m, o)
	if st := e2.Stats(); st.RecurrentSnapshots != kept || kept == 0 || st.KVBlocksCached == 0 {
		t.Fatalf("after the restart: %d states (%d saved), %d blocks cached", st.RecurrentSnapshots, kept, st.KVBlocksCached)
	}
	got, cached := run(e2, second, 12)
	if cached != 48 || !slices.Equal(got, want) {
		t.Errorf("second turn after a restart: %d cached tokens (want 48), tokens %v, cold %v", cached, got, want)
	}
}

// generate runs prompt for n tokens (past any end of generation) and
// returns them and how many prompt tokens came from the prefix cache.
func generate(t *testing.T, e *Engine, prompt []int, n int) ([]int, int) {
	t.Helper()
	st, err := e.Submit(context.Background(), Request{Tokens: prompt, MaxTokens: n, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	_, toks, done, err := st.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return toks, done.Usage.CachedPromptTokens
}
