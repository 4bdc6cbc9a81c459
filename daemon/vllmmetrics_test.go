package daemon

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/testing/synth"
)

// TestVLLMMetricsOnTheAPIPort: GET /metrics on the HTTP API's own socket
// parses with Prometheus's text parser and has the endpoint picker's four
// families, one series each, that follow a running load; the scrape's
// latency while 32 streams run is printed (the engine's lock is never
// taken: engine.Gauges).
func TestVLLMMetricsOnTheAPIPort(t *testing.T) {
	td := startDaemonFlags(t, "", ServeFlags{Model: synth.TinyFile(t, 256), HTTPSocket: "http"})
	hc := unixHTTPClient(td.d.cfg.Server.HTTPSocket)
	scrapeAPI := func() (map[string]float64, map[string]string, time.Duration) {
		t.Helper()
		start := time.Now()
		resp, err := hc.Get("http://batchd/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("the scrape does not parse: %v", err)
		}
		vals, labels := map[string]float64{}, map[string]string{}
		for _, name := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:cache_config_info"} {
			f := fams[name]
			if f == nil || len(f.GetMetric()) != 1 || f.GetType().String() != "GAUGE" {
				t.Fatalf("%s: %v, want one gauge series", name, f)
			}
			m := f.GetMetric()[0]
			vals[name] = m.GetGauge().GetValue()
			for _, l := range m.GetLabel() {
				labels[name+"/"+l.GetName()] = l.GetValue()
			}
		}
		return vals, labels, took
	}
	idle, labels, _ := scrapeAPI()
	if idle["vllm:num_requests_running"] != 0 || idle["vllm:kv_cache_usage_perc"] != 0 || idle["vllm:cache_config_info"] != 1 {
		t.Errorf("idle: %v", idle)
	}
	rt := td.d.defaultModel()
	if labels["vllm:cache_config_info/num_gpu_blocks"] == "" || labels["vllm:cache_config_info/block_size"] == "" {
		t.Errorf("cache info labels %v", labels)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	c := td.dial(t)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _ = c.Generate(context.Background(), client.Request{Prompt: "Once upon a time", MaxTokens: 64, IgnoreEOS: true}, nil)
			}
		}()
	}
	var took []time.Duration
	busy := false
	for i := 0; i < 200; i++ {
		v, _, d := scrapeAPI()
		took = append(took, d)
		busy = busy || v["vllm:num_requests_running"] > 0 && v["vllm:kv_cache_usage_perc"] > 0
		time.Sleep(2 * time.Millisecond)
	}
	stop()
	wg.Wait()
	if !busy {
		t.Error("the gauges never showed the load")
	}
	slices.Sort(took)
	t.Logf("/metrics while 32 streams run (%s): p50 %v, p99 %v over %d scrapes", rt.Name, took[len(took)/2], took[len(took)*99/100], len(took))
}
