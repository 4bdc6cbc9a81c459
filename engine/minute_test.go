package engine

import (
	"math"
	"testing"
	"time"
)

// TestDashboardFigures: fill rate, scheduling efficiency and utilisation
// from known steps and requests on a fake clock, and what falls out of
// the last minute no longer counts.
func TestDashboardFigures(t *testing.T) {
	var d minute
	at := func(s float64) time.Time {
		return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(s * float64(time.Second)))
	}
	// Two steps a second apart, 100 ms of forward each: 2 of 8 slots
	// (realtime 1, standard 1), then 6 of 8 (bulk 6).
	d.step(stepPoint{at: at(0), seqs: 2, max: 8, channel: [3]int{1, 1, 0}, fwd: 100 * time.Millisecond})
	d.step(stepPoint{at: at(1), seqs: 6, max: 8, channel: [3]int{0, 0, 6}, fwd: 100 * time.Millisecond})
	// A realtime request waited 1 s and ran 3 s; a bulk one never ran (2 s).
	d.end(at(1), "realtime", time.Second, 4*time.Second, true)
	d.end(at(1), "bulk", 0, 2*time.Second, false)
	var s Stats
	d.fill(&s, at(1))
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	near("fill rate", s.FillRate, 0.5) // (2/8 + 6/8) / 2
	near("realtime fill", s.FillRateByChannel["realtime"], 1.0/16)
	near("bulk fill", s.FillRateByChannel["bulk"], 6.0/16)
	near("efficiency", s.Efficiency, 3.0/6) // 3 s of compute in 6 s of life
	near("realtime efficiency", s.EfficiencyByChannel["realtime"], 0.75)
	near("bulk efficiency", s.EfficiencyByChannel["bulk"], 0)
	near("utilization", s.Utilization, 0.2/1.1) // 200 ms of forward in 1.1 s
	if _, ok := s.EfficiencyByChannel["standard"]; ok || s.EfficiencySamples != 2 {
		t.Errorf("standard efficiency without requests: %v; samples %d", s.EfficiencyByChannel, s.EfficiencySamples)
	}
	// A minute and a half later, one new step: only it counts.
	d.step(stepPoint{at: at(91), seqs: 8, max: 8, channel: [3]int{0, 8, 0}, fwd: time.Second})
	s = Stats{TokensPerSec: 10}
	d.fill(&s, at(91))
	near("fill rate after", s.FillRate, 1)
	if s.EfficiencySamples != 0 || s.PeakTokensPerSec != 10 {
		t.Errorf("old requests still count: %d; peak %g", s.EfficiencySamples, s.PeakTokensPerSec)
	}
}
