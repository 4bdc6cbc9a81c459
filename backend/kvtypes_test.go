package backend

import (
	"strings"
	"testing"

	"github.com/batchd/batchd/quant"
)

// TestParseKV: the type for both, K's and V's alone over it, the default
// f16, names as llama.cpp's -ctk/-ctv spell them, and refusals that name
// the bad value and what is allowed.
func TestParseKV(t *testing.T) {
	for _, tc := range []struct {
		kv, k, v string
		want     KVTypes
		name     string
	}{
		{"", "", "", SameKV(quant.F16), "f16"},
		{"q8_0", "", "", SameKV(quant.Q8_0), "q8_0"},
		{"Q4_0", "", "", SameKV(quant.Q4_0), "q4_0"},
		{"f16", "q8_0", "", KVTypes{quant.Q8_0, quant.F16}, "q8_0/f16"},
		{"q8_0", "", "q4_0", KVTypes{quant.Q8_0, quant.Q4_0}, "q8_0/q4_0"},
		{"", "q5_0", "iq4_nl", KVTypes{quant.Q5_0, quant.IQ4_NL}, "q5_0/iq4_nl"},
		{"f32", "", "", SameKV(quant.F32), "f32"},
	} {
		got, err := ParseKV(tc.kv, tc.k, tc.v)
		if err != nil || got != tc.want || got.String() != tc.name {
			t.Errorf("ParseKV(%q, %q, %q) = %v (%s), %v; want %v (%s)", tc.kv, tc.k, tc.v, got, got, err, tc.want, tc.name)
		}
	}
	if b := (KVTypes{quant.Q8_0, quant.Q4_0}).Bytes32(); b != 34+18 {
		t.Errorf("q8_0/q4_0: %d bytes per 32 values, want 52", b)
	}
	for _, bad := range [][3]string{{"q4_1", "", ""}, {"", "q5_1", ""}, {"", "", "bf16"}, {"fp8", "", ""}} {
		_, err := ParseKV(bad[0], bad[1], bad[2])
		if err == nil || !strings.Contains(err.Error(), "q8_0, q4_0") {
			t.Errorf("ParseKV(%q): %v, want a refusal listing the types", bad, err)
		}
	}
}
