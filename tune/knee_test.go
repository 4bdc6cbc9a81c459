package tune

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// saturating is throughput that grows linearly to a knee at k, then by a
// tenth of that slope.
func saturating(sizes []float64, k, noise float64, rng *rand.Rand) []Point {
	var pts []Point
	for _, x := range sizes {
		y := 10 * min(x, k)
		if x > k {
			y += (x - k)
		}
		y *= 1 + noise*(2*rng.Float64()-1)
		pts = append(pts, Point{x, y})
	}
	return pts
}

// TestKneeOnSyntheticCurves: knees at known places are found by both rules
// without noise; with 3% noise, over many draws, the chosen knee is the
// true one (or a neighbour) nearly always; a straight line and a flat one
// have no second-difference knee.
func TestKneeOnSyntheticCurves(t *testing.T) {
	sizes := []float64{1, 2, 4, 8, 16, 32, 64}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{2, 3, 4} { // index of the knee: 4, 8, 16
		pts := saturating(sizes, sizes[k], 0, rng)
		got := FindKnee(pts)
		if got.SecondDiff != k || got.Kneedle != k || got.Chosen != k {
			t.Errorf("knee at %v: %+v, want index %d", sizes[k], got, k)
		}
	}
	hits := 0
	for range 200 {
		got := FindKnee(saturating(sizes, 8, 0.03, rng))
		if math.Abs(float64(got.Chosen-3)) <= 1 {
			hits++
		}
	}
	if hits < 190 {
		t.Errorf("with 3%% noise the chosen knee was within one step of the truth %d times of 200", hits)
	}
	var line []Point
	for _, x := range sizes {
		line = append(line, Point{x, 5 * x})
	}
	if k := FindKnee(line); k.SecondDiff != -1 {
		t.Errorf("a straight line: %+v", k)
	}
	// A curve that suddenly pays more after a point (a cliff before a
	// cache fits, say) is a knee for the second difference too.
	jump := []Point{{1, 10}, {2, 20}, {4, 40}, {8, 80}, {16, 320}, {32, 640}}
	if k := FindKnee(jump); k.SecondDiff != 3 {
		t.Errorf("a jump after 8: %+v", k)
	}
}

// TestRolloutJudge: the rollback rule on a baseline and candidates that
// are better, a little worse, worse in throughput, worse in latency, and
// too quiet to judge.
func TestRolloutJudge(t *testing.T) {
	base := Window{TokensPerSec: 100, P95TTFT: 200 * time.Millisecond, Requests: 40}
	for _, c := range []struct {
		name string
		w    Window
		keep bool
	}{
		{"better", Window{120, 150 * time.Millisecond, 40}, true},
		{"within tolerance", Window{92, 215 * time.Millisecond, 40}, true},
		{"slower", Window{80, 180 * time.Millisecond, 40}, false},
		{"later first tokens", Window{110, 300 * time.Millisecond, 40}, false},
		{"too few requests", Window{200, 100 * time.Millisecond, 3}, false},
	} {
		if keep, why := Judge(base, c.w, DefaultTolerance); keep != c.keep || why == "" {
			t.Errorf("%s: keep %v (%s), want %v", c.name, keep, why, c.keep)
		}
	}
}
