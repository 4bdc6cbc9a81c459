package metrics

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/batchd/batchd/engine"
)

// WriteVLLM answers GET /metrics on the HTTP API's own listeners with
// the families an endpoint picker reads, under the names vLLM gives them:
// the Gateway API Inference Extension's EPP defaults
// (gateway-api-inference-extension cmd/epp/runner/options.go, NewOptions:
// vllm:num_requests_waiting, vllm:num_requests_running,
// vllm:kv_cache_usage_perc, vllm:cache_config_info; the model server
// protocol, docs/proposals/003-model-server-protocol: gauges, the KV use a
// 0-1 fraction, the cache info's labels block_size and num_gpu_blocks).
// One series each for the process, over every loaded model, read from
// the engines' lock-free gauges (engine.Gauges): the picker scrapes
// every 50 ms and a busy engine must not slow it. batchd's own names stay
// on server.metrics_listen.
func WriteVLLM(w http.ResponseWriter, models []ModelGauges) {
	var running, waiting, used, total, block int
	name, dtype := "", ""
	for _, m := range models {
		g := m.Gauges
		running, waiting, used, total = running+g.Running, waiting+g.Waiting, used+g.KVUsed, total+g.KVTotal
		if name == "" {
			name, block, dtype = m.Name, g.BlockSize, m.CacheDtype
		}
	}
	usage := 0.0
	if total > 0 {
		usage = float64(used) / float64(total)
	}
	label := `model_name="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(name) + `"`
	var b strings.Builder
	gauge := func(metric, help, labels, value string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n", metric, help, metric, metric, labels, value)
	}
	gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled.", label, strconv.Itoa(waiting))
	gauge("vllm:num_requests_running", "Requests running on the engine.", label, strconv.Itoa(running))
	gauge("vllm:kv_cache_usage_perc", "KV cache blocks in use, a fraction from 0 to 1.", label,
		strconv.FormatFloat(usage, 'g', -1, 64))
	gauge("vllm:cache_config_info", "The KV cache's layout (value 1).",
		fmt.Sprintf(`%s,block_size="%d",cache_dtype="%s",num_gpu_blocks="%d"`, label, block, dtype, total), "1")
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// ModelGauges is one loaded model's lock-free gauges.
type ModelGauges struct {
	Name   string
	Gauges engine.Gauges
	// CacheDtype is how the model's K and V are stored ("f16", "q8_0",
	// "q8_0/q4_0" for K/V), vLLM's cache_dtype.
	CacheDtype string
}
