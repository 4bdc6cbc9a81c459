package tune

import (
	"math"
	"sort"
)

// Point is one point of a curve: batch size, throughput.
type Point struct{ X, Y float64 }

// Knee is where throughput stops paying for batch size, by two rules.
type Knee struct {
	// SecondDiff: the point after which an extra step of batch size buys
	// much less (or much more) throughput than the step before: the
	// largest relative change of the per-step gain, if it passes
	// minChange; -1 when none does.
	SecondDiff int
	// Kneedle (Satopää et al. 2011): the point farthest above the chord
	// from the first to the last point once both axes are scaled to
	// [0, 1]; robust to one noisy point, since it weighs the whole curve.
	Kneedle int
	// Chosen is the one reported: SecondDiff when the two agree or
	// Kneedle finds none, else Kneedle, whose pick does not hang on one
	// step's noise; Why says which and why.
	Chosen int
	Why    string
}

// minChange is the relative change of the per-step gain the second
// difference rule needs to call a knee (half the step before).
const minChange = 0.5

// FindKnee locates the knee of a curve (sorted by X, at least 3 points).
func FindKnee(pts []Point) Knee {
	pts = append([]Point(nil), pts...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
	k := Knee{SecondDiff: secondDiff(pts), Kneedle: kneedle(pts)}
	switch {
	case k.SecondDiff == k.Kneedle:
		k.Chosen, k.Why = k.SecondDiff, "both rules agree"
	case k.Kneedle < 0:
		k.Chosen, k.Why = k.SecondDiff, "second difference (the curve has no bend above its chord)"
	default:
		k.Chosen, k.Why = k.Kneedle, "Kneedle: the rules disagree, and the second difference follows one step's change"
	}
	return k
}

func secondDiff(pts []Point) int {
	best, at := minChange, -1
	for i := 1; i+1 < len(pts); i++ {
		g0 := gain(pts[i-1], pts[i])
		g1 := gain(pts[i], pts[i+1])
		if g0 <= 0 {
			continue
		}
		if c := math.Abs(g1-g0) / g0; c > best {
			best, at = c, i
		}
	}
	return at
}

func gain(a, b Point) float64 {
	if b.X == a.X {
		return 0
	}
	return (b.Y - a.Y) / (b.X - a.X)
}

func kneedle(pts []Point) int {
	n := len(pts)
	if n < 3 {
		return -1
	}
	x0, x1 := pts[0].X, pts[n-1].X
	ymin, ymax := pts[0].Y, pts[0].Y
	for _, p := range pts {
		ymin, ymax = min(ymin, p.Y), max(ymax, p.Y)
	}
	if x1 == x0 || ymax == ymin {
		return -1
	}
	y0, yn := (pts[0].Y-ymin)/(ymax-ymin), (pts[n-1].Y-ymin)/(ymax-ymin)
	best, at := 0.0, -1
	for i := 1; i < n-1; i++ {
		x := (pts[i].X - x0) / (x1 - x0)
		y := (pts[i].Y - ymin) / (ymax - ymin)
		if d := y - (y0 + (yn-y0)*x); d > best {
			best, at = d, i
		}
	}
	return at
}
