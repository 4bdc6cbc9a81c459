package engine

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

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
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = e.Run(ctx) }()
	var streams []*Stream
	for i := range 8 {
		st, err := e.Submit(context.Background(), Request{Tokens: []int{1 + i, 20, 30 + i, 40, 50}, MaxTokens: 12 + i})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	preempted := 0
	for i, st := range streams {
		if i%3 == 0 {
			_ = e.Cancel(st.ID())
		}
		_, _, done, err := st.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		preempted += done.Preemptions
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
		t.Error("no preemption in the tiny pool")
	}
	t.Logf("at most %d states live; %d preemptions", most, preempted)
}
