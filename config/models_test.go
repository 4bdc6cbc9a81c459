package config

import (
	"testing"
	"time"
)

// TestParseKeepAlive: NaN, infinities and numbers past a Duration are
// errors (they all meant forever: 1e300 seconds overflowed negative).
func TestParseKeepAlive(t *testing.T) {
	for _, s := range []string{"NaN", "nan", "Inf", "+Inf", "-inf", "infinity", "1e300", "1e19", "x", ""} {
		if d, err := ParseKeepAlive(s); err == nil {
			t.Errorf("%q: %v, want an error", s, d)
		}
	}
	for s, want := range map[string]time.Duration{"-1": -1, "-1m": -1, "0": 0, "300": 5 * time.Minute, "5m": 5 * time.Minute, "1e9": 1e9 * time.Second} {
		if d, err := ParseKeepAlive(s); err != nil || d != want {
			t.Errorf("%q: %v %v, want %v", s, d, err, want)
		}
	}
}
