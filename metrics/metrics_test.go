package metrics

import "testing"

// TestMetricsAddressMustBeLocal: only loopback addresses and Unix sockets.
func TestMetricsAddressMustBeLocal(t *testing.T) {
	for _, a := range []string{"0.0.0.0:9400", "10.0.0.1:80", "example.com:80", "nonsense"} {
		if ln, err := metricsListener(a); err == nil {
			ln.Close()
			t.Errorf("%s accepted", a)
		}
	}
	ln, err := metricsListener("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}
