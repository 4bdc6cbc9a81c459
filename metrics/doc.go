// Package metrics is what batchd tells its watchers: the Prometheus
// families on server.metrics_listen (histograms fed by each engine's
// Observer as things happen, gauges and counters read from the engines'
// stats at scrape time, every series labelled with a configured model's
// name, never a client's string), the four vLLM gauges an endpoint
// picker scrapes from the HTTP API's own /metrics, and the health score
// stats, metrics and batchctl top share. It reads engines and the
// config; it never changes them.
package metrics
