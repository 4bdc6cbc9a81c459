package daemon

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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc"
)

// Metric names follow vLLM's, under a batchd: prefix.
const metricPrefix = "batchd:"

// channelNames are the QoS channels every per-channel series is reported for.
var channelNames = []string{"realtime", "standard", "bulk"}

// metrics is the Prometheus view of the daemon: histograms fed by the engine
// as things happen (engine.Observer), gauges and counters read from the
// engine's stats at scrape time.
type metrics struct {
	reg                                    *prometheus.Registry
	ttft, itl, e2e, queue, prefill, decode *prometheus.HistogramVec
	batch                                  prometheus.Histogram
	iterTokens                             prometheus.Counter
	finished                               *prometheus.CounterVec
	sloMet, sloAll                         *prometheus.CounterVec
	targets                                func(channel string) time.Duration
	stats                                  func() (engine.Stats, bool)
}

var _ engine.Observer = (*metrics)(nil)

func latencyBuckets() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
}

func newMetrics(stats func() (engine.Stats, bool), targets func(string) time.Duration) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), stats: stats, targets: targets}
	hist := func(name, help string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + name, Help: help,
			Buckets: latencyBuckets()}, []string{"channel"})
		m.reg.MustRegister(h)
		return h
	}
	m.ttft = hist("time_to_first_token_seconds", "Time from arrival to the first generated token.")
	m.itl = hist("inter_token_latency_seconds", "Time between two tokens of a request.")
	m.e2e = hist("e2e_request_latency_seconds", "Time from arrival to the end of a request.")
	m.queue = hist("request_queue_time_seconds", "Time from arrival to first being scheduled.")
	m.prefill = hist("request_prefill_time_seconds", "Time from first being scheduled to the first token.")
	m.decode = hist("request_decode_time_seconds", "Time from the first token to the end.")
	m.batch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricPrefix + "iteration_batch_size",
		Help: "Sequences per engine step.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}})
	m.iterTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: metricPrefix + "iteration_tokens_total",
		Help: "Tokens processed by engine steps (prompt and generated)."})
	m.finished = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "request_success_total",
		Help: "Requests ended, by finish reason."}, []string{"finished_reason", "channel"})
	m.sloMet = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "slo_ttft_met_total",
		Help: "Requests whose first token came within their channel's TTFT target."}, []string{"channel"})
	m.sloAll = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "slo_ttft_requests_total",
		Help: "Requests measured against their channel's TTFT target."}, []string{"channel"})
	m.reg.MustRegister(m.batch, m.iterTokens, m.finished, m.sloMet, m.sloAll, m)
	for _, c := range channelNames { // every channel's series exists from the start
		m.sloMet.WithLabelValues(c)
		m.sloAll.WithLabelValues(c)
	}
	return m
}

func (m *metrics) FirstToken(ch string, ttft, prefill time.Duration) {
	m.ttft.WithLabelValues(ch).Observe(ttft.Seconds())
	m.prefill.WithLabelValues(ch).Observe(prefill.Seconds())
	m.sloAll.WithLabelValues(ch).Inc()
	if t := m.targets(ch); t <= 0 || ttft <= t {
		m.sloMet.WithLabelValues(ch).Inc()
	}
}

func (m *metrics) InterToken(ch string, d time.Duration) {
	m.itl.WithLabelValues(ch).Observe(d.Seconds())
}

func (m *metrics) Finished(r engine.FinishRecord) {
	m.e2e.WithLabelValues(r.Channel).Observe(r.E2E.Seconds())
	m.queue.WithLabelValues(r.Channel).Observe(r.Queue.Seconds())
	if r.Decode > 0 {
		m.decode.WithLabelValues(r.Channel).Observe(r.Decode.Seconds())
	}
	m.finished.WithLabelValues(string(r.Reason), r.Channel).Inc()
}

func (m *metrics) Step(seqs, tokens int) {
	m.batch.Observe(float64(seqs))
	m.iterTokens.Add(float64(tokens))
}

// The scrape-time series, read from the engine's stats snapshot.
var (
	descRunning  = prometheus.NewDesc(metricPrefix+"num_requests_running", "Requests running.", []string{"channel"}, nil)
	descWaiting  = prometheus.NewDesc(metricPrefix+"num_requests_waiting", "Requests waiting.", []string{"channel"}, nil)
	descKV       = prometheus.NewDesc(metricPrefix+"kv_cache_usage_perc", "KV cache blocks in use (0 to 1).", nil, nil)
	descPreempt  = prometheus.NewDesc(metricPrefix+"num_preemptions_total", "Preemptions.", nil, nil)
	descPQueries = prometheus.NewDesc(metricPrefix+"prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", nil, nil)
	descPHits    = prometheus.NewDesc(metricPrefix+"prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", nil, nil)
	descGen      = prometheus.NewDesc(metricPrefix+"generation_tokens_total", "Tokens generated.", nil, nil)
	descPrompt   = prometheus.NewDesc(metricPrefix+"prompt_tokens_total", "Prompt tokens computed.", nil, nil)
	descMaxSeqs  = prometheus.NewDesc(metricPrefix+"max_num_seqs", "Effective max_num_seqs.", nil, nil)
	descBudget   = prometheus.NewDesc(metricPrefix+"max_num_batched_tokens", "Effective token budget per step.", nil, nil)
	descLevel    = prometheus.NewDesc(metricPrefix+"controller_load_level", "Adaptive controller's load level (1 for the current one).", []string{"level"}, nil)
	descMoves    = prometheus.NewDesc(metricPrefix+"controller_moves_total", "Adaptive controller decisions that changed the limits.", nil, nil)
)

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunning, descWaiting, descKV, descPreempt, descPQueries, descPHits,
		descGen, descPrompt, descMaxSeqs, descBudget, descLevel, descMoves} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	s, ok := m.stats()
	if !ok {
		return
	}
	for _, c := range channelNames {
		ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, float64(s.RunningByChannel[c]), c)
		ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(s.WaitingByChannel[c]), c)
	}
	ch <- prometheus.MustNewConstMetric(descKV, prometheus.GaugeValue, s.KVUsage)
	ch <- prometheus.MustNewConstMetric(descPreempt, prometheus.CounterValue, float64(s.Preemptions))
	ch <- prometheus.MustNewConstMetric(descPQueries, prometheus.CounterValue, float64(s.PrefixQueries))
	ch <- prometheus.MustNewConstMetric(descPHits, prometheus.CounterValue, float64(s.PrefixHits))
	ch <- prometheus.MustNewConstMetric(descGen, prometheus.CounterValue, float64(s.GeneratedTokens))
	ch <- prometheus.MustNewConstMetric(descPrompt, prometheus.CounterValue, float64(s.PromptTokens))
	ch <- prometheus.MustNewConstMetric(descMaxSeqs, prometheus.GaugeValue, float64(s.MaxNumSeqs))
	ch <- prometheus.MustNewConstMetric(descBudget, prometheus.GaugeValue, float64(s.MaxNumBatchedTokens))
	if c := s.Controller; c != nil {
		for _, l := range []string{"idle", "low", "normal", "high", "critical"} {
			v := 0.0
			if l == c.Level {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descLevel, prometheus.GaugeValue, v, l)
		}
		ch <- prometheus.MustNewConstMetric(descMoves, prometheus.CounterValue, float64(c.Moves))
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

// serveMetrics serves /metrics on server.metrics_listen until the returned
// stop is called: at most metricsConnections connections of the shared
// budget, idle ones closed after 30 s, each given server.hello_timeout to
// make its first request, and with server.metrics_key set only for a
// scraper that sends it (Prometheus's authorization credentials).
func serveMetrics(sc ServerConfig, m *metrics, budget *ipc.Budget, log *slog.Logger) (stop func(context.Context) error, err error) {
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
