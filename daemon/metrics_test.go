package daemon

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	client "github.com/batchd/batchd/clients/go"
)

// TestMetricsEndpoint serves metrics on a unix socket and parses the scrape
// with the Prometheus text parser.
func TestMetricsEndpoint(t *testing.T) {
	msock := filepath.Join(t.TempDir(), "metrics.sock")
	td := startDaemon(t, "[server]\nmetrics_listen = \"unix:"+msock+"\"\n")
	c := td.dial(t)
	for _, ch := range []string{"realtime", "bulk", ""} {
		if _, err := c.Generate(context.Background(), client.Request{Prompt: "Once upon a time", MaxTokens: 8, Channel: ch}, nil); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, msock)
	for _, name := range []string{
		"batchd:time_to_first_token_seconds", "batchd:inter_token_latency_seconds",
		"batchd:e2e_request_latency_seconds", "batchd:request_queue_time_seconds",
		"batchd:request_prefill_time_seconds", "batchd:request_decode_time_seconds",
		"batchd:num_requests_running", "batchd:num_requests_waiting", "batchd:kv_cache_usage_perc",
		"batchd:num_preemptions_total", "batchd:prefix_cache_queries_total", "batchd:prefix_cache_hits_total",
		"batchd:iteration_tokens_total", "batchd:iteration_batch_size", "batchd:slo_ttft_met_total",
		"batchd:request_success_total", "batchd:max_num_seqs",
		"batchd:batch_fill_rate", "batchd:scheduling_efficiency", "batchd:utilization",
		"batchd:health_score", "batchd:health_component",
	} {
		if fams[name] == nil {
			t.Errorf("missing %s", name)
		}
	}
	// The dashboard's gauges are fractions, and three requests ran.
	for _, name := range []string{"batchd:batch_fill_rate", "batchd:scheduling_efficiency", "batchd:utilization",
		"batchd:health_score", "batchd:health_component"} {
		for _, m := range fams[name].GetMetric() {
			if v := m.GetGauge().GetValue(); v < 0 || v > 1 || name != "batchd:health_component" && name != "batchd:batch_fill_rate" && v == 0 {
				t.Errorf("%s %v = %g", name, m.GetLabel(), v)
			}
		}
	}
	if n := len(fams["batchd:health_component"].GetMetric()); n != 4 {
		t.Errorf("%d health components, want 4", n)
	}
	ttft := fams["batchd:time_to_first_token_seconds"]
	var chans []string
	var count uint64
	for _, m := range ttft.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "channel" {
				chans = append(chans, l.GetValue())
			} else if l.GetName() != "model_name" || l.GetValue() != "stories260K" {
				t.Errorf("label %s=%q, want model_name=stories260K and channel", l.GetName(), l.GetValue())
			}
		}
		count += m.GetHistogram().GetSampleCount()
	}
	if count != 3 || !strings.Contains(strings.Join(chans, ","), "realtime") || !strings.Contains(strings.Join(chans, ","), "standard") {
		t.Fatalf("ttft samples %d by channel %v", count, chans)
	}
}

// scrape reads /metrics on the unix socket msock and parses it with the
// Prometheus text parser.
func scrape(t *testing.T, msock string) map[string]*dto.MetricFamily {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", msock)
	}}}
	resp, err := hc.Get("http://batchd/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	return fams
}
