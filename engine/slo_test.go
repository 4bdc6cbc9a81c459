package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batchd/batchd/engine/sched"
)

func TestEngineRejectsExpiredAndFullChannels(t *testing.T) {
	m := loadModel(t, "gguf")
	e := startEngine(t, m, engineOpts{noStart: true, sched: sched.Config{Policy: sched.PolicySLO}})
	e.channels = map[string]ChannelPolicy{"realtime": {QueueLimit: 1, Deadline: time.Nanosecond}}
	s, err := e.Submit(context.Background(), Request{Prompt: "Once", MaxTokens: 2, Channel: "realtime"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Submit(context.Background(), Request{Prompt: "Lily", MaxTokens: 2, Channel: "realtime"}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("channel queue limit: %v", err)
	}
	if _, err := e.Submit(context.Background(), Request{Prompt: "Tom", MaxTokens: 2, Channel: "bulk"}); err != nil {
		t.Fatalf("other channel refused: %v", err)
	}
	time.Sleep(time.Millisecond) // the realtime deadline (1 ns) is surely past
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Run(ctx) }()
	_, _, done, _ := s.Wait(context.Background())
	if done.Finish != FinishError || !errors.Is(done.Err, ErrDeadlineExceeded) {
		t.Fatalf("expired request ended %s %v", done.Finish, done.Err)
	}
	cancel()
	<-e.Done()
}
