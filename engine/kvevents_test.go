package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/cpu"
	"github.com/batchd/batchd/kvcache"
)

// eventLog is a KVEventSink that keeps every event.
type eventLog struct {
	mu  sync.Mutex
	evs []kvcache.Event
}

func (l *eventLog) KVEvents(evs []kvcache.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, evs...)
	l.mu.Unlock()
}

// TestKVEventsRebuildThePrefixCache: a subscriber that applies every event
// the engine publishes holds exactly the blocks the prefix cache indexes,
// after a load that shares prefixes and evicts under a small pool; a
// Stored event's tokens are its blocks' own.
func TestKVEventsRebuildThePrefixCache(t *testing.T) {
	m := loadModel(t, "gguf")
	be, err := cpu.New(m, backend.Options{NumBlocks: 40, BlockSize: 4, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	log := &eventLog{}
	e, err := New(Options{Model: m, Backend: be, NumBlocks: 40, BlockSize: 4, KVEvents: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = e.Run(ctx) }()
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := Request{Prompt: fmt.Sprintf("Once upon a time there was a %s named Tim %d", []string{"cat", "dog", "bird"}[i%3], i/3),
				MaxTokens: 12}
			st, err := e.Submit(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			if _, _, _, err := st.Wait(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	cancel()
	<-e.Done()

	held := map[kvcache.Hash]bool{}
	stored, removed := 0, 0
	for _, ev := range log.evs {
		switch ev.Kind {
		case kvcache.Stored:
			parent := ev.Parent
			for i, h := range ev.Hashes {
				if got := kvcache.ChainHash(parent, ev.Tokens[i*4:(i+1)*4]); got != h {
					t.Fatalf("stored hash %d is not its tokens' chain hash", i)
				}
				held[h], parent = true, h
				stored++
			}
		case kvcache.Removed:
			for _, h := range ev.Hashes {
				if !held[h] {
					t.Fatal("removed a block never stored")
				}
				delete(held, h)
				removed++
			}
		case kvcache.Cleared:
			clear(held)
		}
	}
	cached := e.pool.Cached()
	if len(held) != len(cached) {
		t.Fatalf("subscriber holds %d blocks, the prefix cache %d", len(held), len(cached))
	}
	for _, c := range cached {
		if !held[c.Hash] {
			t.Fatalf("block %d is cached but was never told", c.ID)
		}
	}
	if removed == 0 {
		t.Fatalf("no eviction under a 40-block pool (%d stored)", stored)
	}
	t.Logf("%d blocks stored, %d removed, %d held", stored, removed, len(held))
}
