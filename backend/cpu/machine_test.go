package cpu

import "testing"

// TestMeasureInt8Peak: each inner loop runs and reports a rate (kernelbench
// prints them beside the kernels' own).
func TestMeasureInt8Peak(t *testing.T) {
	p := MeasureInt8Peak(1)
	if !haveSIMD {
		if p != (Int8Peak{}) {
			t.Fatalf("no SIMD, yet %+v", p)
		}
		return
	}
	if p.Sign <= 0 || p.Words <= 0 || p.Nibbles <= 0 {
		t.Fatalf("int8 peak %+v", p)
	}
	t.Logf("billions of products a second, one thread: %+v", p)
}
