package grammar

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// decimalText writes r in plain decimal (its exact expansion).
func decimalText(r *big.Rat) string {
	s := r.FloatString(20)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

var plainNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]{0,15})(\.[0-9]{1,16})?$`)

// TestNumberBoundsAreEnforced: for random bounds (inclusive and
// exclusive, draft 4's boolean form, fractional, negative) and
// multipleOf, the grammar takes exactly the plain decimal numbers (no
// exponent, llama.cpp's digit limits) within them: checked on numbers at,
// just inside and just outside each bound and at random, against exact
// rational arithmetic. Number bounds were refused in strict mode and
// ignored otherwise (a tool's price of -704 came back).
func TestNumberBoundsAreEnforced(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	bounds := []string{"0", "1", "-1", "0.5", "-0.25", "3.14159", "100", "-100", "0.001", "999.999", "12", "-7.5", "1e2", "2.5e-1"}
	multiples := []string{"", "0.5", "0.01", "3", "0.25", "7", "1", "0.2"}
	ctx := context.Background()
	for n := 0; n < 300; n++ {
		schema := map[string]any{"type": "number"}
		var lo, hi *big.Rat
		var loEx, hiEx bool
		pick := func() (json.Number, *big.Rat) {
			s := bounds[rng.IntN(len(bounds))]
			r, _ := new(big.Rat).SetString(s)
			return json.Number(s), r
		}
		switch rng.IntN(4) {
		case 0, 1:
			v, r := pick()
			loEx = rng.IntN(2) == 0
			if loEx && rng.IntN(2) == 0 {
				schema["minimum"], schema["exclusiveMinimum"] = v, true // draft 4
			} else if loEx {
				schema["exclusiveMinimum"] = v
			} else {
				schema["minimum"] = v
			}
			lo = r
		}
		switch rng.IntN(4) {
		case 0, 1:
			v, r := pick()
			hiEx = rng.IntN(2) == 0
			if hiEx {
				schema["exclusiveMaximum"] = v
			} else {
				schema["maximum"] = v
			}
			hi = r
		}
		var mult *big.Rat
		if m := multiples[rng.IntN(len(multiples))]; m != "" {
			schema["multipleOf"] = json.Number(m)
			mult, _ = new(big.Rat).SetString(m)
		}
		if lo == nil && hi == nil && mult == nil {
			continue
		}
		js, _ := json.Marshal(schema)
		g, err := FromSchema(ctx, js, SchemaOptions{Strict: true})
		if err != nil {
			if strings.Contains(err.Error(), "no number meets") || strings.Contains(err.Error(), "nothing fits") {
				continue
			}
			t.Fatalf("%s: %v", js, err)
		}
		within := func(x *big.Rat) bool {
			if lo != nil && (x.Cmp(lo) < 0 || loEx && x.Cmp(lo) == 0) {
				return false
			}
			if hi != nil && (x.Cmp(hi) > 0 || hiEx && x.Cmp(hi) == 0) {
				return false
			}
			if mult != nil && !new(big.Rat).Quo(x, mult).IsInt() {
				return false
			}
			return true
		}
		var cands []string
		for _, b := range []*big.Rat{lo, hi, mult, new(big.Rat)} {
			if b == nil {
				continue
			}
			for _, d := range []string{"0", "1", "0.1", "0.01", "0.001", "0.0001", "0.5"} {
				dr, _ := new(big.Rat).SetString(d)
				cands = append(cands, decimalText(new(big.Rat).Add(b, dr)), decimalText(new(big.Rat).Sub(b, dr)))
			}
		}
		for range 40 {
			s := fmt.Sprintf("%d", rng.IntN(2000)-1000)
			if rng.IntN(2) == 0 {
				s += fmt.Sprintf(".%d", rng.IntN(1000))
			}
			cands = append(cands, s)
		}
		cands = append(cands, "-0", "00", "1.", ".5", "1e2", "-")
		for _, s := range cands {
			want := false
			if plainNumber.MatchString(s) && s != "-0" && !strings.HasPrefix(s, "-0.") || strings.HasPrefix(s, "-0.") && strings.Trim(s[3:], "0") != "" {
				x, _ := new(big.Rat).SetString(s)
				want = within(x)
			}
			m := g.NewMatcher()
			got := m.Accept([]byte(s)) == nil && m.AllowsEnd()
			if got != want {
				t.Fatalf("%s: %q accepted %v, want %v", js, s, got, want)
			}
		}
	}
}

// TestIntegerMultipleOf: an integer's multipleOf is enforced, with or
// without bounds (a fraction never).
func TestIntegerMultipleOf(t *testing.T) {
	g, err := FromSchema(context.Background(), []byte(`{"type":"integer","multipleOf":4,"minimum":-10,"exclusiveMaximum":20}`), SchemaOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := -30; i <= 30; i++ {
		m := g.NewMatcher()
		s := fmt.Sprint(i)
		got := m.Accept([]byte(s)) == nil && m.AllowsEnd()
		if want := i%4 == 0 && i >= -10 && i < 20 && s != "-0"; got != want {
			t.Errorf("%d: accepted %v", i, got)
		}
	}
	for _, s := range []string{"4.0", "8.", "1e1"} {
		m := g.NewMatcher()
		if m.Accept([]byte(s)) == nil && m.AllowsEnd() {
			t.Errorf("%q accepted", s)
		}
	}
}
