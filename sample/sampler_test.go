package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestArgmaxLowestOnTie(t *testing.T) {
	if got := Argmax([]float32{1, 3, 3, 2}); got != 1 {
		t.Fatalf("Argmax = %d, want 1", got)
	}
}

// TestArgmaxVectorMatchesLoop: the vector path gives the loop's answer for
// every length and tail, ties (the first wins), a maximum in the tail,
// signed zeros and NaNs after the first element.
func TestArgmaxVectorMatchesLoop(t *testing.T) {
	loop := func(x []float32) int {
		best := 0
		for i, v := range x {
			if v > x[best] {
				best = i
			}
		}
		return best
	}
	rng := rand.New(rand.NewPCG(3, 4))
	nan := float32(math.NaN())
	for n := 1; n < 300; n++ {
		for trial := range 8 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.IntN(7)) - 3 // small range: many ties
			}
			switch trial {
			case 1:
				x[n-1] = 9 // the maximum in the tail
			case 2:
				x[rng.IntN(n)] = nan
			case 3:
				for i := range x {
					x[i] = float32(math.Copysign(0, float64(rng.IntN(2))-0.5))
				}
			case 4:
				x[0] = nan // nothing beats a leading NaN: the loop says 0
			case 5:
				for i := range x {
					x[i] = -rng.Float32() * 100
				}
			}
			if got, want := Argmax(x), loop(x); got != want {
				t.Fatalf("n=%d trial %d: Argmax %d, loop %d (%v vs %v)", n, trial, got, want, x[got], x[want])
			}
		}
	}
}

func TestSamplerSeededAndFiltered(t *testing.T) {
	logits := func() []float32 { return []float32{1, 2, 3, 4, 0.5, 3.9, -1, 2.5} }
	draw := func(p Params, n int) []int {
		s := New(p)
		var out []int
		for range n {
			out = append(out, s.Sample(logits(), nil))
		}
		return out
	}
	p := Params{Temperature: 1, Seed: 42}
	a, b := draw(p, 200), draw(p, 200)
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different draws")
	}
	p.Seed = 43
	if slices.Equal(a, draw(p, 200)) {
		t.Fatal("different seeds gave the same 200 draws")
	}
	seen := map[int]bool{}
	for _, id := range a {
		seen[id] = true
	}
	if len(seen) < 4 {
		t.Fatalf("temperature 1 drew only %v", seen)
	}
	for _, tc := range []struct {
		p     Params
		allow []int
	}{
		{Params{Temperature: 1, TopK: 2, Seed: 1}, []int{3, 5}},
		{Params{Temperature: 1, TopP: 0.5, Seed: 1}, []int{3, 5}},
		{Params{Temperature: 1, MinP: 0.5, Seed: 1}, []int{2, 3, 5}},
		{Params{Temperature: 0}, []int{3}},
	} {
		for _, id := range draw(tc.p, 300) {
			if !slices.Contains(tc.allow, id) {
				t.Fatalf("%+v drew %d, allowed %v", tc.p, id, tc.allow)
			}
		}
	}
}

func TestRepetitionPenalty(t *testing.T) {
	s := New(Params{RepetitionPenalty: 2})
	if got := s.Sample([]float32{0, 4, 3}, []int{1}); got != 2 {
		t.Fatalf("penalized token still chosen: %d", got)
	}
}

// TestRepetitionPenaltyOncePerDistinctToken: a token seen three times is
// penalized once (4/2 = 2 stays above 1.9), as llama.cpp and Hugging Face
// do; once per occurrence divided it by 8 and picked token 2. Repeated calls
// (the stamp) keep it once per call.
func TestRepetitionPenaltyOncePerDistinctToken(t *testing.T) {
	s := New(Params{RepetitionPenalty: 2})
	for range 3 {
		logits := []float32{0, 4, 1.9, -1}
		if got := s.Sample(logits, []int{1, 1, 1, 3, 3}); got != 1 {
			t.Fatalf("token 1 seen 3 times: chose %d, logits %v", got, logits)
		}
		if logits[1] != 2 || logits[3] != -2 || logits[2] != 1.9 {
			t.Fatalf("penalized logits %v, want [0 2 1.9 -2]", logits)
		}
	}
}

func TestSamplingParamsValidate(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, p := range []Params{{Temperature: -1}, {TopK: -1}, {TopP: 1.5}, {MinP: -0.1}, {RepetitionPenalty: -1},
		{Temperature: inf}, {Temperature: 3e38}, {Temperature: 1e-40}, {Temperature: nan}, {Temperature: 11},
		{TopK: MaxTopK + 1}, {TopP: nan}, {MinP: inf}, {RepetitionPenalty: inf}, {RepetitionPenalty: 1e-30},
		{RepetitionPenalty: 100}} {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if err := (Params{Temperature: 0.7, TopK: 40, TopP: 0.9}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestFrequencyAndPresencePenalties: OpenAI's definition over the generated
// tokens only: logit - count*frequency - presence, once per distinct token.
func TestFrequencyAndPresencePenalties(t *testing.T) {
	s := New(Params{FrequencyPenalty: 0.5, PresencePenalty: 0.25})
	s.PromptLen = 2
	logits := []float32{1, 1, 1, 1}
	// Prompt [0, 1] does not count; generated: 2 twice, 1 once.
	s.Sample(logits, []int{0, 1, 2, 2, 1})
	want := []float32{1, 1 - 0.5 - 0.25, 1 - 1 - 0.25, 1}
	for i := range want {
		if logits[i] != want[i] {
			t.Fatalf("logits %v, want %v", logits, want)
		}
	}
	// A second call starts from fresh counts.
	logits = []float32{1, 1, 1, 1}
	s.Sample(logits, []int{0, 1, 3})
	if logits[3] != 0.25 || logits[2] != 1 {
		t.Errorf("second call: %v", logits)
	}
	for _, p := range []Params{{FrequencyPenalty: 2.5}, {PresencePenalty: -3}} {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

func TestLogProbs(t *testing.T) {
	logits := []float32{1, 3, 2, 3, -1}
	lse := math.Log(math.Exp(1) + 2*math.Exp(3) + math.Exp(2) + math.Exp(-1))
	got := LogProbs(logits, 2, 3)
	near := func(a float32, b float64) bool { return math.Abs(float64(a)-b) < 1e-6 }
	if got.Token != 2 || !near(got.Logprob, 2-lse) || len(got.Top) != 3 {
		t.Fatalf("%+v", got)
	}
	// Ties keep the lower id first.
	for i, want := range []int{1, 3, 2} {
		if got.Top[i].Token != want || !near(got.Top[i].Logprob, float64(logits[want])-lse) {
			t.Errorf("top[%d] = %+v, want token %d", i, got.Top[i], want)
		}
	}
	if lp := LogProbs(logits, 0, 0); lp.Top != nil || !near(lp.Logprob, 1-lse) {
		t.Errorf("k = 0: %+v", lp)
	}
}

// TestDrawUnsortedIsTheSortedDraw: the partition descent finds the token
// the walk over the sorted candidates finds, for any mass r (away from a
// boundary, where float sums in another order may round the other way);
// and selectTop keeps exactly the k best.
func TestDrawUnsortedIsTheSortedDraw(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		n := 1 + rng.IntN(300)
		c := make([]candidate, n)
		var total float32
		for i := range c {
			p := rng.Float32()
			if trial%3 == 0 {
				p = float32(rng.IntN(4)) + 0.5 // ties, broken by id
			}
			c[i] = candidate{i, p}
			total += p
		}
		sorted := slices.Clone(c)
		slices.SortFunc(sorted, byProb)
		for range 20 {
			r := rng.Float32() * total
			want, near := -1, false
			var cum float32
			for _, x := range sorted {
				if abs := r - cum; abs > -1e-3 && abs < 1e-3 {
					near = true
				}
				cum += x.p
				if r < cum && want < 0 {
					want = x.id
				}
			}
			if got := drawUnsorted(slices.Clone(c), r); got != want && !near && want >= 0 {
				t.Fatalf("trial %d, r %v: drew %d, sorted walk %d", trial, r, got, want)
			}
		}
		k := 1 + rng.IntN(n)
		top := slices.Clone(c)
		selectTop(top, k)
		top = top[:k]
		slices.SortFunc(top, byProb)
		if !slices.Equal(top, sorted[:k]) {
			t.Fatalf("trial %d: selectTop(%d) kept %v, want %v", trial, k, top, sorted[:k])
		}
	}
}

// TestDrawWithNothingToDraw: a row with no finite logit (a grammar's dead
// end, a NaN from the forward pass) gives a token whose logit NonFinite
// flags, at any temperature; it used to index an empty candidate list.
func TestDrawWithNothingToDraw(t *testing.T) {
	negInf, nan := float32(math.Inf(-1)), float32(math.NaN())
	for _, row := range [][]float32{{negInf, negInf, negInf}, {nan, nan, nan}, {nan, negInf, nan}} {
		for _, temp := range []float32{0, 0.7} {
			s := New(Params{Temperature: temp, Seed: 1, TopK: 2, TopP: 0.9})
			tok := s.Draw(slices.Clone(row))
			if tok < 0 || tok >= len(row) || !NonFinite(row[tok]) {
				t.Errorf("row %v at %v: token %d", row, temp, tok)
			}
		}
	}
}
