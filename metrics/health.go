package metrics

import (
	"time"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc/wire"
)

// HealthChannel's TTFT objective is the latency component's yardstick.
const HealthChannel = "standard"

// Health score weights: normalised throughput, 1/p99 (against the TTFT
// objective), utilisation and memory headroom.
const (
	healthThroughput = 0.4
	healthLatency    = 0.3
	healthUtil       = 0.2
	healthMemory     = 0.1
)

// HealthOf scores a model's engine from 0 to 1 and gives each component
// (each 0 to 1), so a user sees why it fell:
//   - throughput: tokens/s over the best this engine has done (1 while it
//     has nothing to do: nothing is held back);
//   - latency: the TTFT objective over the recent p99 TTFT, at most 1;
//   - utilisation: forward time over wall time in the last minute;
//   - memory headroom: the KV blocks not in use.
func HealthOf(s engine.Stats, ttftTarget time.Duration) wire.HealthScore {
	h := wire.HealthScore{Throughput: 1, Latency: 1, Utilization: s.Utilization, MemoryHeadroom: 1 - s.KVUsage}
	if s.Running+s.Waiting > 0 {
		h.Throughput = 0
		if s.PeakTokensPerSec > 0 {
			h.Throughput = min(1, s.TokensPerSec/s.PeakTokensPerSec)
		}
	}
	if p99 := s.TTFT.P99; s.TTFT.Count > 0 && p99 > 0 && ttftTarget > 0 {
		h.Latency = min(1, ttftTarget.Seconds()/p99)
	}
	h.Score = healthThroughput*h.Throughput + healthLatency*h.Latency + healthUtil*h.Utilization + healthMemory*h.MemoryHeadroom
	return h
}
