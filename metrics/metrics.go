package metrics

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/batchd/batchd/config"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc"
)

// metricsConnections is the metrics listener's own share of the
// connection budget: a Prometheus server or two, never a flood.
const metricsConnections = 16

// Metric names follow vLLM's, under a batchd: prefix.
const metricPrefix = "batchd:"

// channelNames are the QoS channels every per-channel series is reported for.
var channelNames = []string{"realtime", "standard", "bulk"}

// Metrics is the Prometheus view of the daemon: histograms fed by the engine
// as things happen (engine.Observer), gauges and counters read from the
// engine's stats at scrape time.
//
// Every series has a model_name label: only the names of configured and
// loaded models (an operator's files), never a client's string, so the
// label set stays bounded.
type Metrics struct {
	reg                                    *prometheus.Registry
	ttft, itl, e2e, queue, prefill, decode *prometheus.HistogramVec
	batch                                  *prometheus.HistogramVec
	iterTokens                             *prometheus.CounterVec
	finished                               *prometheus.CounterVec
	sloMet, sloAll                         *prometheus.CounterVec
	targets                                func(channel string) time.Duration
	stats                                  func() []ModelStats
}

// ModelStats is one loaded model's engine figures, for a scrape.
type ModelStats struct {
	Name  string
	Stats engine.Stats
}

// modelObserver is the engine.Observer of one model's engine.
type modelObserver struct {
	m    *Metrics
	name string
}

var _ engine.Observer = modelObserver{}

// ForModel is the observer for model name's engine; its series exist from
// the start.
func (m *Metrics) ForModel(name string) engine.Observer {
	for _, c := range channelNames {
		m.sloMet.WithLabelValues(name, c)
		m.sloAll.WithLabelValues(name, c)
	}
	return modelObserver{m, name}
}

func latencyBuckets() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
}

// New makes the metrics: stats gives every loaded model's figures at
// scrape time, targets a channel's TTFT objective (read live).
func New(stats func() []ModelStats, targets func(string) time.Duration) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), stats: stats, targets: targets}
	hist := func(name, help string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + name, Help: help,
			Buckets: latencyBuckets()}, []string{"model_name", "channel"})
		m.reg.MustRegister(h)
		return h
	}
	m.ttft = hist("time_to_first_token_seconds", "Time from arrival to the first generated token.")
	m.itl = hist("inter_token_latency_seconds", "Time between two tokens of a request.")
	m.e2e = hist("e2e_request_latency_seconds", "Time from arrival to the end of a request.")
	m.queue = hist("request_queue_time_seconds", "Time from arrival to first being scheduled.")
	m.prefill = hist("request_prefill_time_seconds", "Time from first being scheduled to the first token.")
	m.decode = hist("request_decode_time_seconds", "Time from the first token to the end.")
	m.batch = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + "iteration_batch_size",
		Help: "Sequences per engine step.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}}, []string{"model_name"})
	m.iterTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "iteration_tokens_total",
		Help: "Tokens processed by engine steps (prompt and generated)."}, []string{"model_name"})
	m.finished = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "request_success_total",
		Help: "Requests ended, by finish reason."}, []string{"model_name", "finished_reason", "channel"})
	m.sloMet = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "slo_ttft_met_total",
		Help: "Requests whose first token came within their channel's TTFT target."}, []string{"model_name", "channel"})
	m.sloAll = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "slo_ttft_requests_total",
		Help: "Requests measured against their channel's TTFT target."}, []string{"model_name", "channel"})
	m.reg.MustRegister(m.batch, m.iterTokens, m.finished, m.sloMet, m.sloAll, m)
	return m
}

func (o modelObserver) FirstToken(ch string, ttft, prefill time.Duration) {
	m := o.m
	m.ttft.WithLabelValues(o.name, ch).Observe(ttft.Seconds())
	m.prefill.WithLabelValues(o.name, ch).Observe(prefill.Seconds())
	m.sloAll.WithLabelValues(o.name, ch).Inc()
	if t := m.targets(ch); t <= 0 || ttft <= t {
		m.sloMet.WithLabelValues(o.name, ch).Inc()
	}
}

func (o modelObserver) InterToken(ch string, d time.Duration) {
	o.m.itl.WithLabelValues(o.name, ch).Observe(d.Seconds())
}

func (o modelObserver) Finished(r engine.FinishRecord) {
	m := o.m
	m.e2e.WithLabelValues(o.name, r.Channel).Observe(r.E2E.Seconds())
	m.queue.WithLabelValues(o.name, r.Channel).Observe(r.Queue.Seconds())
	if r.Decode > 0 {
		m.decode.WithLabelValues(o.name, r.Channel).Observe(r.Decode.Seconds())
	}
	m.finished.WithLabelValues(o.name, string(r.Reason), r.Channel).Inc()
}

func (o modelObserver) Step(seqs, tokens int) {
	o.m.batch.WithLabelValues(o.name).Observe(float64(seqs))
	o.m.iterTokens.WithLabelValues(o.name).Add(float64(tokens))
}

// The scrape-time series, read from the engine's stats snapshot.
var (
	descRunning = prometheus.NewDesc(metricPrefix+"num_requests_running", "Requests running.", []string{"model_name", "channel"}, nil)
	descWaiting = prometheus.NewDesc(metricPrefix+"num_requests_waiting", "Requests waiting.", []string{"model_name", "channel"}, nil)
	descKV      = prometheus.NewDesc(metricPrefix+"kv_cache_usage_perc", "KV cache blocks in use (0 to 1).", []string{"model_name"}, nil)
	descPreempt = prometheus.NewDesc(metricPrefix+"num_preemptions_total", "Preemptions.", []string{"model_name"}, nil)
	// Speculative decoding, as vLLM names it (spec_decode_*).
	descSpecDrafts = prometheus.NewDesc(metricPrefix+"spec_decode_num_drafts_total", "Decode steps that verified a draft.",
		[]string{"model_name"}, nil)
	descSpecDraft = prometheus.NewDesc(metricPrefix+"spec_decode_num_draft_tokens_total", "Tokens drafted.",
		[]string{"model_name"}, nil)
	descSpecKept = prometheus.NewDesc(metricPrefix+"spec_decode_num_accepted_tokens_total", "Drafted tokens kept.",
		[]string{"model_name"}, nil)
	// Mixtures of experts: the router's work, summed over layers and steps.
	descMoEPairs = prometheus.NewDesc(metricPrefix+"moe_token_expert_pairs_total", "Token-expert pairs routed, every layer of every step.",
		[]string{"model_name"}, nil)
	descMoETouched = prometheus.NewDesc(metricPrefix+"moe_experts_touched_total", "Experts read, every layer of every step (the distinct experts of a layer's pairs).",
		[]string{"model_name"}, nil)
	descMoELayers = prometheus.NewDesc(metricPrefix+"moe_layer_passes_total", "Mixture-of-experts layers run, every step.",
		[]string{"model_name"}, nil)
	descPQueries = prometheus.NewDesc(metricPrefix+"prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", []string{"model_name"}, nil)
	descPHits    = prometheus.NewDesc(metricPrefix+"prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", []string{"model_name"}, nil)
	descGen      = prometheus.NewDesc(metricPrefix+"generation_tokens_total", "Tokens generated.", []string{"model_name"}, nil)
	descPrompt   = prometheus.NewDesc(metricPrefix+"prompt_tokens_total", "Prompt tokens computed.", []string{"model_name"}, nil)
	descMaxSeqs  = prometheus.NewDesc(metricPrefix+"max_num_seqs", "Effective max_num_seqs.", []string{"model_name"}, nil)
	descBudget   = prometheus.NewDesc(metricPrefix+"max_num_batched_tokens", "Effective token budget per step.", []string{"model_name"}, nil)
	descLevel    = prometheus.NewDesc(metricPrefix+"controller_load_level", "Adaptive controller's load level (1 for the current one).", []string{"model_name", "level"}, nil)
	descMoves    = prometheus.NewDesc(metricPrefix+"controller_moves_total", "Adaptive controller decisions that changed the limits.", []string{"model_name"}, nil)
	descFill     = prometheus.NewDesc(metricPrefix+"batch_fill_rate", "Running sequences / max_num_seqs per step, mean over the last minute (channel all, or each channel's share).", []string{"model_name", "channel"}, nil)
	descEff      = prometheus.NewDesc(metricPrefix+"scheduling_efficiency", "Compute / (queue wait + compute) of the requests that ended in the last minute.", []string{"model_name", "channel"}, nil)
	descUtil     = prometheus.NewDesc(metricPrefix+"utilization", "Forward-pass time / wall time over the last minute.", []string{"model_name"}, nil)
	descHealth   = prometheus.NewDesc(metricPrefix+"health_score", "0.4 x throughput + 0.3 x latency + 0.2 x utilization + 0.1 x memory headroom (each 0 to 1).", []string{"model_name"}, nil)
	descHealthC  = prometheus.NewDesc(metricPrefix+"health_component", "The health score's components: throughput, latency, utilization, memory_headroom.", []string{"model_name", "component"}, nil)
)

// Gatherer is the registry a scrape reads.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunning, descWaiting, descKV, descPreempt, descSpecDrafts, descSpecDraft, descSpecKept, descPQueries, descPHits,
		descMoEPairs, descMoETouched, descMoELayers,
		descGen, descPrompt, descMaxSeqs, descBudget, descLevel, descMoves, descFill, descEff, descUtil, descHealth, descHealthC} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	target := m.targets(HealthChannel)
	for _, ms := range m.stats() {
		collectModel(ch, ms.Name, ms.Stats)
		collectDashboard(ch, ms.Name, ms.Stats, target)
	}
}

func collectModel(ch chan<- prometheus.Metric, name string, s engine.Stats) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{name}, labels...)...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, name)
	}
	for _, c := range channelNames {
		gauge(descRunning, float64(s.RunningByChannel[c]), c)
		gauge(descWaiting, float64(s.WaitingByChannel[c]), c)
	}
	gauge(descKV, s.KVUsage)
	counter(descPreempt, float64(s.Preemptions))
	counter(descSpecDrafts, float64(s.SpecShares))
	counter(descSpecDraft, float64(s.SpecDrafted))
	counter(descSpecKept, float64(s.SpecAccepted))
	if s.ExpertLayers > 0 {
		counter(descMoEPairs, float64(s.ExpertPairs))
		counter(descMoETouched, float64(s.ExpertTouched))
		counter(descMoELayers, float64(s.ExpertLayers))
	}
	counter(descPQueries, float64(s.PrefixQueries))
	counter(descPHits, float64(s.PrefixHits))
	counter(descGen, float64(s.GeneratedTokens))
	counter(descPrompt, float64(s.PromptTokens))
	gauge(descMaxSeqs, float64(s.MaxNumSeqs))
	gauge(descBudget, float64(s.MaxNumBatchedTokens))
	if c := s.Controller; c != nil {
		for _, l := range []string{"idle", "low", "normal", "high", "critical"} {
			v := 0.0
			if l == c.Level {
				v = 1
			}
			gauge(descLevel, v, l)
		}
		counter(descMoves, float64(c.Moves))
	}
}

// collectDashboard exports the dashboard's figures and the health score.
func collectDashboard(ch chan<- prometheus.Metric, name string, s engine.Stats, target time.Duration) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{name}, labels...)...)
	}
	gauge(descFill, s.FillRate, "all")
	for _, c := range channelNames {
		gauge(descFill, s.FillRateByChannel[c], c)
		if e, ok := s.EfficiencyByChannel[c]; ok {
			gauge(descEff, e, c)
		}
	}
	if s.EfficiencySamples > 0 {
		gauge(descEff, s.Efficiency, "all")
	}
	gauge(descUtil, s.Utilization)
	h := HealthOf(s, target)
	gauge(descHealth, h.Score)
	for _, c := range []struct {
		name string
		v    float64
	}{{"throughput", h.Throughput}, {"latency", h.Latency}, {"utilization", h.Utilization}, {"memory_headroom", h.MemoryHeadroom}} {
		gauge(descHealthC, c.v, c.name)
	}
}

// metricsListener opens ADDR: a loopback host:port, or unix:PATH.
func metricsListener(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSocket != 0 {
			_ = os.Remove(path)
		}
		return net.Listen("unix", path)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %q: want host:port or unix:PATH", addr)
	}
	if ip := net.ParseIP(host); !(host == "localhost" || (ip != nil && ip.IsLoopback())) {
		return nil, fmt.Errorf("metrics address %q: only loopback addresses are served (the socket is for local use)", addr)
	}
	return net.Listen("tcp", addr)
}

// Serve serves /metrics on server.metrics_listen until the returned
// stop is called: at most metricsConnections connections of the shared
// budget, idle ones closed after 30 s, each given server.hello_timeout to
// make its first request, and with server.metrics_key set only for a
// scraper that sends it (Prometheus's authorization credentials).
func Serve(sc config.ServerConfig, m *Metrics, budget *ipc.Budget, log *slog.Logger) (stop func(context.Context) error, err error) {
	addr := sc.MetricsListen
	ln, err := metricsListener(addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsAuth(sc.MetricsKey, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if bc, ok := c.(*ipc.BudgetConn); ok {
				ctx = context.WithValue(ctx, slotKey{}, bc.Slot())
			}
			return ctx
		}, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	ln = budget.Listener(ln, ipc.ListenerOptions{Limit: metricsConnections, PreAuth: sc.HelloTimeout.Duration})
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server failed", "err", err)
		}
	}()
	log.Info("metrics", "listen", addr)
	return srv.Shutdown, nil
}

type slotKey struct{}

// metricsAuth admits a scrape that sends key as its bearer token (any,
// when key is empty) and counts its connection as the daemon's own in the
// budget; any other request gets a 401 that closes the connection.
func metricsAuth(key string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" {
			scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimLeft(tok, " ")), []byte(key)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="batchd metrics"`)
				w.Header().Set("Connection", "close")
				http.Error(w, "missing or wrong bearer token (server.metrics_key)", http.StatusUnauthorized)
				return
			}
		}
		// Only a keyed scraper holds its connection against others; without
		// a key a new scrape may take the room of an old one.
		if s, ok := r.Context().Value(slotKey{}).(*ipc.Slot); ok && key != "" {
			if err := s.AuthenticateService(); err != nil {
				w.Header().Set("Connection", "close")
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
