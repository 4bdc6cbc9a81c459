package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batchd/batchd/engine/sched"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/cpu"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

type engineOpts struct {
	blocks, blockSize int
	sched             sched.Config
	maxQueue          int
	noStart           bool
	gate              *sync.Mutex // held while a test submits: the loop waits at its next turn
	quantDot          string      // backend.Options.QuantDot
	kernels           string      // backend.Options.Kernels; where this CPU lacks them, its best
	kvType            quant.DType
	spec              SpecConfig
	draft             *model.Model // spec.Method "draft": its model, on the target's threads
	draftBlocks       int          // its KV pool; 0 is blocks
	// allLayers keeps every layer in a block for a windowed model, which
	// otherwise runs in window groups (as serve lays it out), its pool
	// blocks times as many blocks as the layout's groups fit in the same
	// memory.
	allLayers bool
	// watch, when set, runs on the loop after each step's checks.
	watch func(*Engine)
}

// layout is the window groups a test engine runs o's model in (Tables 0:
// none), and o's pool scaled to the same memory.
func layout(m *model.Model, o engineOpts) (model.KVLayout, int) {
	c := m.Config
	lay := c.Layout(!o.allLayers && c.SlidingWindow > 0 && c.SlidingWindow < c.Context)
	if lay.Tables == 0 {
		return lay, o.blocks
	}
	return lay, o.blocks * c.AttnLayers() / lay.Slots
}

// cpuNew is cpu.New where a local named cpu hides the package.
var cpuNew = func(m *model.Model, o backend.Options) (backend.Backend, error) { return cpu.New(m, o) }

func loadModel(t testing.TB, format string) *model.Model {
	t.Helper()
	var m *model.Model
	var err error
	switch format {
	case "synth": // random weights: for behaviour that needs no real model
		m, err = model.Load(synth.TinyFile(t, 256), model.LoadOptions{})
	case "gguf":
		m, err = model.Load(testmodels.Path(t, "stories260K.gguf"), model.LoadOptions{})
	default:
		m, err = model.Load(testmodels.Path(t, "stories260K.bin"), model.LoadOptions{Tokenizer: testmodels.Path(t, "tok512.bin")})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// startEngine runs an engine whose loop checks the KV pool's invariants at
// every step boundary; a violation fails the test.
func startEngine(t testing.TB, m *model.Model, o engineOpts) *Engine {
	t.Helper()
	if o.blocks == 0 {
		o.blocks = 256
	}
	if o.blockSize == 0 {
		o.blockSize = 16
	}
	lay, blocks := layout(m, o)
	windowed := lay.Tables > 0
	o.blocks = blocks
	bo := backend.Options{NumBlocks: o.blocks, BlockSize: o.blockSize, Threads: 2, QuantDot: o.quantDot,
		KV: backend.SameKV(o.kvType), Windowed: windowed, Kernels: o.kernels}
	be, err := cpu.New(m, bo)
	if err != nil && o.kernels != "" {
		bo.Kernels = ""
		be, err = cpu.New(m, bo)
	}
	cpu := be
	if err != nil {
		t.Fatal(err)
	}
	var draftBe backend.Backend
	if o.draft != nil {
		if o.draftBlocks == 0 {
			o.draftBlocks = o.blocks
		}
		draftBe, err = cpuNew(o.draft, backend.Options{NumBlocks: o.draftBlocks, BlockSize: o.blockSize, Threads: 2,
			QuantDot: o.quantDot, KV: backend.SameKV(o.kvType), ShareThreads: cpu})
		if err != nil {
			t.Fatal(err)
		}
		o.spec.Draft = &DraftModel{Model: o.draft, Backend: draftBe, NumBlocks: o.draftBlocks}
	}
	e, err := New(Options{Model: m, Backend: cpu, NumBlocks: o.blocks, BlockSize: o.blockSize, Windowed: windowed,
		Scheduler: o.sched, MaxQueue: o.maxQueue, Speculative: o.spec})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var violation error
	e.afterStep = func() {
		if o.gate != nil { // the test submits a batch whole before the loop's next turn
			o.gate.Lock()
			o.gate.Unlock() //nolint:staticcheck // a barrier, not a critical section
		}
		err := e.pool.Check()
		if err == nil && e.spec.drafter != nil {
			err = e.spec.drafter.pool.Check()
		}
		if err != nil {
			mu.Lock()
			violation = err
			mu.Unlock()
		}
		if o.watch != nil {
			o.watch(e)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if !o.noStart {
		go func() { _ = e.Run(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		if !o.noStart {
			<-e.Done()
		}
		if draftBe != nil {
			if d := e.spec.drafter; d != nil && !o.noStart && d.pool.Usage().Used != 0 { // nil: speculation was off (a recurrent model)
				u := d.pool.Usage()
				t.Errorf("the draft model's pool holds %d blocks after every request ended", u.Used)
			}
			draftBe.Close()
		}
		cpu.Close()
		mu.Lock()
		defer mu.Unlock()
		if violation != nil {
			t.Errorf("KV pool invariant broken: %v", violation)
		}
	})
	return e
}

type result struct {
	text   string
	tokens []int
	done   Event
}

func run(t testing.TB, e *Engine, r Request) result {
	t.Helper()
	s, err := e.Submit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	text, toks, done, err := s.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return result{text, toks, done}
}

func checkGolden(t testing.TB, g testmodels.Golden, r result) {
	t.Helper()
	if !slices.Equal(r.tokens, g.OutputTokens) {
		t.Fatalf("%q: tokens differ at %d (preemptions %d)", g.Prompt, firstDiff(r.tokens, g.OutputTokens), r.done.Preemptions)
	}
	if r.text != g.Text {
		t.Fatalf("%q: text %q, want %q", g.Prompt, r.text, g.Text)
	}
	want := FinishLength
	if g.Stop == "bos" {
		want = FinishStop
	}
	if r.done.Finish != want {
		t.Fatalf("%q: finish %s, want %s", g.Prompt, r.done.Finish, want)
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestGoldenAloneThroughEngine(t *testing.T) {
	for _, format := range []string{"llama2c", "gguf"} {
		m := loadModel(t, format)
		e := startEngine(t, m, engineOpts{})
		for _, g := range testmodels.Goldens(t) {
			r := run(t, e, Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens(), StopTokenIDs: g.StopTokenIDs()})
			checkGolden(t, g, r)
			if r.done.Usage.PromptTokens != len(g.PromptTokens) || r.done.Usage.CompletionTokens != len(g.OutputTokens) {
				t.Fatalf("usage %+v", r.done.Usage)
			}
		}
		if s := e.Stats(); s.KVBlocksUsed != 0 || s.Running != 0 || s.Waiting != 0 {
			t.Fatalf("engine not idle after the goldens: %+v", s)
		}
	}
}

// TestBatchingIsInvisible runs 32 golden requests with staggered arrivals,
// once with room for all and once in a pool so small that they preempt each
// other, and once with the prefix cache warm; greedy tokens never change.
func TestBatchingIsInvisible(t *testing.T) {
	m := loadModel(t, "gguf")
	goldens := testmodels.Goldens(t)
	for _, tc := range []struct {
		name      string
		n         int
		o         engineOpts
		preempted bool
	}{
		{"roomy", 32, engineOpts{blocks: 512, blockSize: 16, sched: sched.Config{MaxNumBatchedTokens: 64}}, false},
		{"tight pool", 32, engineOpts{blocks: 40, blockSize: 16, sched: sched.Config{MaxNumBatchedTokens: 64}}, true},
		{"block size 1", 8, engineOpts{blocks: 500, blockSize: 1, sched: sched.Config{MaxNumBatchedTokens: 7, MaxPartialPrefills: 2}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startEngine(t, m, tc.o)
			var wg sync.WaitGroup
			results := make([]result, tc.n)
			for i := range results {
				g := goldens[i%len(goldens)]
				s, err := e.Submit(context.Background(), Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens(), StopTokenIDs: g.StopTokenIDs()})
				if err != nil {
					t.Fatal(err)
				}
				// Stagger: the next request arrives once this one has its first token.
				first := make(chan struct{})
				wg.Add(1)
				go func() {
					defer wg.Done()
					var once sync.Once
					for {
						ev, ok, err := s.Recv(context.Background())
						if err != nil || !ok {
							once.Do(func() { close(first) })
							return
						}
						once.Do(func() { close(first) })
						results[i].text += ev.Text
						results[i].tokens = append(results[i].tokens, ev.Tokens...)
						if ev.Done {
							results[i].done = ev
						}
					}
				}()
				if i%3 != 2 {
					<-first
				}
			}
			wg.Wait()
			preemptions := 0
			for i, r := range results {
				checkGolden(t, goldens[i%len(goldens)], r)
				preemptions += r.done.Preemptions
			}
			s := e.Stats()
			if tc.preempted && (preemptions == 0 || s.Preemptions == 0) {
				t.Fatalf("expected preemptions, got %d (stats %d)", preemptions, s.Preemptions)
			}
			if s.MeanBatchSize <= 1.5 {
				t.Fatalf("requests did not batch: mean batch size %.2f", s.MeanBatchSize)
			}
			if s.KVBlocksUsed != 0 {
				t.Fatalf("blocks still used: %+v", s)
			}
		})
	}
}

// TestRequestLevelModesGiveSameTokens: in static and dynamic batches the
// rows of finished members keep decoding pad tokens until the batch ends;
// that never leaks into a member's tokens, usage or terminal event.
func TestRequestLevelModesGiveSameTokens(t *testing.T) {
	m := loadModel(t, "gguf")
	goldens := testmodels.Goldens(t)
	for _, mode := range []sched.Mode{sched.ModeStatic, sched.ModeDynamic} {
		t.Run(mode.String(), func(t *testing.T) {
			e := startEngine(t, m, engineOpts{blocks: 512, sched: sched.Config{Mode: mode,
				BatchSize: len(goldens), BatchWindow: 20 * time.Millisecond}})
			var streams []*Stream
			for _, g := range goldens {
				s, err := e.Submit(context.Background(), Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens(), StopTokenIDs: g.StopTokenIDs()})
				if err != nil {
					t.Fatal(err)
				}
				streams = append(streams, s)
			}
			for i, s := range streams {
				text, toks, done, err := s.Wait(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				g := goldens[i]
				checkGolden(t, g, result{text, toks, done})
				if done.Usage.CompletionTokens != len(g.OutputTokens) {
					t.Fatalf("%q: usage %+v, want %d completion tokens", g.Prompt, done.Usage, len(g.OutputTokens))
				}
			}
			if st := e.Stats(); st.KVBlocksUsed != 0 || st.Running != 0 {
				t.Fatalf("batch not released: %+v", st)
			}
		})
	}
}

func TestPrefixCacheHitGivesSameTokens(t *testing.T) {
	m := loadModel(t, "gguf")
	e := startEngine(t, m, engineOpts{blocks: 256, blockSize: 4})
	g := testmodels.Goldens(t)[2] // 13 prompt tokens: 3 full blocks of 4
	first := run(t, e, Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens(), StopTokenIDs: g.StopTokenIDs()})
	second := run(t, e, Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens(), StopTokenIDs: g.StopTokenIDs()})
	checkGolden(t, g, first)
	checkGolden(t, g, second)
	if first.done.Usage.CachedPromptTokens != 0 || second.done.Usage.CachedPromptTokens != 12 {
		t.Fatalf("cached prompt tokens %d then %d, want 0 then 12",
			first.done.Usage.CachedPromptTokens, second.done.Usage.CachedPromptTokens)
	}
	if s := e.Stats(); s.PrefixHits != 12 || s.PrefixQueries != 24 {
		t.Fatalf("prefix stats %d/%d", s.PrefixHits, s.PrefixQueries)
	}
}

func TestStopStringsAndTokens(t *testing.T) {
	m := loadModel(t, "gguf")
	e := startEngine(t, m, engineOpts{})
	g := testmodels.Goldens(t)[0]
	r := run(t, e, Request{Prompt: g.Prompt, MaxTokens: 100, Stop: []string{"Lily. She", "zzz"}})
	if r.text != ", there was a little girl named " || r.done.Finish != FinishStop {
		t.Fatalf("stop string: %q %s", r.text, r.done.Finish)
	}
	// A stop token id ends before emitting it.
	r = run(t, e, Request{Prompt: g.Prompt, MaxTokens: 100, StopTokenIDs: []int{g.OutputTokens[3]}})
	if !slices.Equal(r.tokens, g.OutputTokens[:3]) || r.done.Finish != FinishStop {
		t.Fatalf("stop token: %v %s", r.tokens, r.done.Finish)
	}
}

func TestSubmitValidation(t *testing.T) {
	m := loadModel(t, "gguf")
	e := startEngine(t, m, engineOpts{blocks: 8, blockSize: 16})
	for name, r := range map[string]Request{
		"bad token":     {Tokens: []int{1, 9999}},
		"empty tokens":  {Tokens: []int{}},
		"temperature":   {Prompt: "x", Sampling: sample.Params{Temperature: -1}},
		"past context":  {Prompt: "x", MaxTokens: 600},
		"negative max":  {Prompt: "x", MaxTokens: -1},
		"empty stop":    {Prompt: "x", Stop: []string{""}},
		"never fits kv": {Prompt: "x", MaxTokens: 200},
	} {
		if _, err := e.Submit(context.Background(), r); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
	}
	// Without max_tokens the request is sized to what the pool can hold.
	r := run(t, e, Request{Prompt: "Once"})
	if r.done.Finish != FinishLength || r.done.Usage.PromptTokens+r.done.Usage.CompletionTokens != 8*16+1 {
		t.Fatalf("default max tokens: %+v %s", r.done.Usage, r.done.Finish)
	}
}

func TestQueueFullIsImmediateAndTyped(t *testing.T) {
	m := loadModel(t, "gguf")
	e := startEngine(t, m, engineOpts{maxQueue: 3, noStart: true})
	for i := range 3 {
		if _, err := e.Submit(context.Background(), Request{Prompt: fmt.Sprint(i), MaxTokens: 1}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.Submit(context.Background(), Request{Prompt: "x", MaxTokens: 1})
	if !errors.Is(err, ErrQueueFull) || !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("got %v, want ErrQueueFull", err)
	}
}

func TestCancelFreesBlocks(t *testing.T) {
	m := loadModel(t, "gguf")
	e := startEngine(t, m, engineOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	s1, _ := e.Submit(ctx, Request{Prompt: "Once upon a time", MaxTokens: 400})
	s2, _ := e.Submit(context.Background(), Request{Prompt: "Lily", MaxTokens: 400})
	for _, s := range []*Stream{s1, s2} {
		if _, _, err := s.Recv(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := e.Cancel(s2.ID()); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Stream{s1, s2} {
		_, _, done, _ := s.Wait(context.Background())
		if done.Finish != FinishCancelled {
			t.Fatalf("finish %s", done.Finish)
		}
	}
	if err := e.Cancel(s2.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel of a finished request: %v", err)
	}
	// The terminal event is sent after the blocks are freed.
	if u := e.pool.Usage(); u.Used != 0 {
		t.Fatalf("blocks still used after cancel: %+v", u)
	}
}

// TestStorm submits, cancels and finishes requests at random; the loop checks
// block conservation at every step and every request ends exactly once.
func TestStorm(t *testing.T) {
	m := loadModel(t, "gguf")
	e := startEngine(t, m, engineOpts{blocks: 30, blockSize: 8, sched: sched.Config{MaxNumBatchedTokens: 40, MaxNumSeqs: 6}})
	rng := rand.New(rand.NewPCG(5, 6))
	var wg sync.WaitGroup
	var mu sync.Mutex
	terminal := map[uint64]int{}
	for i := range 120 {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := e.Submit(ctx, Request{Prompt: fmt.Sprintf("story %d about", i), MaxTokens: 1 + rng.IntN(60),
			Sampling: sample.Params{Temperature: 0.8, Seed: uint64(i)}, Priority: rng.IntN(3)})
		if err != nil {
			t.Fatal(err)
		}
		action := rng.IntN(4)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			for {
				ev, ok, err := s.Recv(context.Background())
				if err != nil || !ok {
					return
				}
				if ev.Done {
					mu.Lock()
					terminal[s.ID()]++
					mu.Unlock()
				} else if action == 0 {
					cancel()
				} else if action == 1 {
					_ = e.Cancel(s.ID())
				}
			}
		}()
	}
	wg.Wait()
	for id, n := range terminal {
		if n != 1 {
			t.Fatalf("request %d got %d terminal events", id, n)
		}
	}
	if len(terminal) != 120 {
		t.Fatalf("%d of 120 requests ended", len(terminal))
	}
	if s := e.Stats(); s.KVBlocksUsed != 0 || s.Running != 0 {
		t.Fatalf("not idle after the storm: %+v", s)
	}
}

func TestShutdownEndsEverything(t *testing.T) {
	m := loadModel(t, "gguf")
	cpu, _ := cpu.New(m, backend.Options{NumBlocks: 64})
	defer cpu.Close()
	e, _ := New(Options{Model: m, Backend: cpu, NumBlocks: 64})
	ctx, cancel := context.WithCancel(context.Background())
	var streams []*Stream
	for range 5 {
		s, err := e.Submit(context.Background(), Request{Prompt: "Once", MaxTokens: 300})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	go func() { _ = e.Run(ctx) }()
	if _, _, err := streams[0].Recv(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-e.Done()
	for _, s := range streams {
		_, _, done, _ := s.Wait(context.Background())
		if !done.Done || (done.Finish != FinishCancelled && done.Finish != FinishLength) {
			t.Fatalf("terminal %+v", done)
		}
	}
	if _, err := e.Submit(context.Background(), Request{Prompt: "x"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("submit after shutdown: %v", err)
	}
}

func TestSleepReleasesAndWakes(t *testing.T) {
	m := loadModel(t, "gguf")
	e := startEngine(t, m, engineOpts{blocks: 64, blockSize: 4})
	g := testmodels.Goldens(t)[2]
	checkGolden(t, g, run(t, e, Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens(), StopTokenIDs: g.StopTokenIDs()}))
	e.Sleep(true)
	for !e.Sleeping() {
		runtime.Gosched()
	}
	if s := e.Stats(); !s.Sleeping || s.Sleeps != 1 || s.KVBlocksCached != 0 {
		t.Fatalf("after sleep: %+v", s)
	}
	// The next request wakes the engine; the cache is gone, the tokens are not.
	r := run(t, e, Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens(), StopTokenIDs: g.StopTokenIDs()})
	checkGolden(t, g, r)
	if s := e.Stats(); s.Sleeping || s.Wakes != 1 || r.done.Usage.CachedPromptTokens != 0 {
		t.Fatalf("after wake: sleeping %v wakes %d cached %d", s.Sleeping, s.Wakes, r.done.Usage.CachedPromptTokens)
	}
}
