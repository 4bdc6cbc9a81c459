package sample

import (
	"slices"
	"testing"
)

// TestVerifyKeepsTheDistribution: whatever token a draft proposes (a likely
// one, an unlikely one, one top-k filters out), what Verify returns is
// distributed as Draw's draws (a chi-square test over 40,000 draws on a
// small vocabulary, at the 0.1% level) and it keeps the draft as often as
// Draw would give it. Greedy, it returns the argmax.
func TestVerifyKeepsTheDistribution(t *testing.T) {
	logits := []float32{2.0, 1.2, 0.3, 1.9, -0.5, 0.8, -2, 0.1}
	p := Params{Temperature: 0.9, TopK: 6, TopP: 0.97, Seed: 5}
	ref := New(p)
	c, _, total := ref.dist(slices.Clone(logits))
	want := make([]float64, len(logits))
	for _, x := range c {
		want[x.id] = float64(x.p / total)
	}
	const n = 40000
	for _, draft := range []int{0, 2, 6} { // the top token, a middling one, one top-k removes
		s := New(Params{Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, Seed: uint64(draft) + 11})
		counts := make([]float64, len(logits))
		kept := 0
		for range n {
			got, ok := s.Verify(slices.Clone(logits), draft)
			counts[got]++
			if ok != (got == draft) {
				t.Fatalf("kept %v but returned %d for draft %d", ok, got, draft)
			}
			if ok {
				kept++
			}
		}
		chi, df := 0.0, -1
		for id, w := range want {
			if w == 0 {
				if counts[id] != 0 {
					t.Fatalf("draft %d: token %d is outside the distribution but came %v times", draft, id, counts[id])
				}
				continue
			}
			e := w * n
			chi += (counts[id] - e) * (counts[id] - e) / e
			df++
		}
		if crit := map[int]float64{3: 16.27, 4: 18.47, 5: 20.52, 6: 22.46, 7: 24.32}[df]; chi > crit {
			t.Errorf("draft %d: chi-square %.1f over %d degrees of freedom: not Draw's distribution (counts %v, want %v)",
				draft, chi, df, counts, want)
		}
		if rate := float64(kept) / n; rate < want[draft]-0.01 || rate > want[draft]+0.01 {
			t.Errorf("draft %d kept %.3f of the time, p is %.3f", draft, rate, want[draft])
		}
		t.Logf("draft %d: kept %.3f (p %.3f), chi-square %.1f, df %d", draft, float64(kept)/n, want[draft], chi, df)
	}
	g := New(Params{})
	if got, ok := g.Verify(slices.Clone(logits), 3); got != 0 || ok {
		t.Errorf("greedy Verify of a non-argmax: %d %v", got, ok)
	}
	if got, ok := g.Verify(slices.Clone(logits), 0); got != 0 || !ok {
		t.Errorf("greedy Verify of the argmax: %d %v", got, ok)
	}
}
