package metrics

import (
	"math"
	"testing"
	"time"

	"github.com/batchd/batchd/engine"
)

// TestHealthScore: the weights, each component's rule, and the idle case
// (nothing to do is no lost throughput).
func TestHealthScore(t *testing.T) {
	busy := engine.Stats{Running: 4, TokensPerSec: 50, PeakTokensPerSec: 100, Utilization: 0.9, KVUsage: 0.75,
		TTFT: engine.Dist{Count: 10, P99: 4}}
	h := HealthOf(busy, 2*time.Second)
	want := 0.4*0.5 + 0.3*0.5 + 0.2*0.9 + 0.1*0.25
	if h.Throughput != 0.5 || h.Latency != 0.5 || h.Utilization != 0.9 || h.MemoryHeadroom != 0.25 || math.Abs(h.Score-want) > 1e-12 {
		t.Errorf("busy: %+v, want score %g", h, want)
	}
	fast := busy
	fast.TTFT.P99, fast.TokensPerSec = 0.5, 120 // under the objective, over the old peak
	if h := HealthOf(fast, 2*time.Second); h.Latency != 1 || h.Throughput != 1 {
		t.Errorf("fast: %+v, want latency and throughput capped at 1", h)
	}
	if h := HealthOf(engine.Stats{}, 2*time.Second); h.Throughput != 1 || h.Latency != 1 || h.MemoryHeadroom != 1 ||
		math.Abs(h.Score-0.8) > 1e-12 {
		t.Errorf("idle: %+v, want 0.8 (only utilisation is 0)", h)
	}
}
