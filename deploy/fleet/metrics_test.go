package fleet

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/backend"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/backend/metrics"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/daemon"
	"github.com/batchd/batchd/daemon/daemontest"
	"github.com/batchd/batchd/testing/synth"
)

// TestPickerReadsMetrics: the endpoint picker's own scraper (the Gateway
// API Inference Extension v1.1.0's PodMetricsClientImpl, with the vLLM
// metric names its EPP defaults to) reads batchd's /metrics without an
// error: the queue, the KV use and the cache's block size.
func TestPickerReadsMetrics(t *testing.T) {
	model := synth.TinyFile(t, 512)
	td := daemontest.Start(t, daemontest.Options{Config: "[model]\nname = \"qwen2.5-7b\"\n[engine]\nblock_size = 32\n",
		Flags: daemon.ServeFlags{Model: model, HTTPSocket: "http"}})
	scraper, err := pickerScraper(td.HTTP())
	if err != nil {
		t.Fatal(err)
	}
	pod := &backend.Pod{NamespacedName: types.NamespacedName{Namespace: "ai", Name: "batchd-0"}, Address: "batchd", Port: "8000",
		MetricsHost: "batchd"}
	// A request holds KV blocks while it runs; the scrape must read it as a fraction.
	c := td.Dial(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Generate(context.Background(), client.Request{Prompt: "Once upon a time", MaxTokens: 64, IgnoreEOS: true}, nil)
		done <- err
	}()
	state, err := scraper.FetchMetrics(context.Background(), pod, metrics.NewMetricsState())
	if err != nil {
		t.Fatalf("the picker's scrape: %v", err)
	}
	if state.CacheBlockSize != 32 || state.KVCacheUsagePercent < 0 || state.KVCacheUsagePercent > 1 || state.WaitingQueueSize < 0 {
		t.Errorf("the picker read %+v", state)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
