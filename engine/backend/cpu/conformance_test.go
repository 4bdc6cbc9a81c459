package cpu

import (
	"testing"

	"github.com/batchd/batchd/engine/backend"
	"github.com/batchd/batchd/engine/backend/backendtest"
	"github.com/batchd/batchd/engine/model"
)

// TestConformance holds the CPU backend to the contract every backend keeps.
func TestConformance(t *testing.T) {
	backendtest.Run(t, func(m *model.Model, o backend.Options) (backend.Backend, error) { return New(m, o) })
}

// TestConformanceInt8 runs the suite with the int8 path on (it covers the
// Q4_0 model of the batch-invariance test), once with the VNNI kernels and
// once with the pure-Go loops.
func TestConformanceInt8(t *testing.T) {
	for _, k := range []string{"", "go"} {
		t.Run("kernels="+k, func(t *testing.T) {
			backendtest.Run(t, func(m *model.Model, o backend.Options) (backend.Backend, error) {
				o.QuantDot, o.Kernels = "int8", k
				return New(m, o)
			})
		})
	}
}
