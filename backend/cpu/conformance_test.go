package cpu

import (
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/backendtest"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/testmodels"
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

// TestInt8BatchInvariantOnKQuants: the int8 path keeps batching invisible
// on llama.cpp's Q4_K_M mix (Q4_K, Q6_K and float-path formats in one
// file) and its Q5_K_M, with the SIMD kernels and the Go loops.
func TestInt8BatchInvariantOnKQuants(t *testing.T) {
	for _, name := range []string{"Q4_K_M-mix", "Q5_K_M"} {
		m, err := model.Load(filepath.Join(testmodels.Dir(t), "quant", "tiny-quant-"+name+".gguf"), model.LoadOptions{})
		if err != nil {
			t.Skip(err)
		}
		for _, k := range []string{"", "go"} {
			backendtest.BatchInvariance(t, func(m *model.Model, o backend.Options) (backend.Backend, error) {
				o.QuantDot, o.Kernels = "int8", k
				return New(m, o)
			}, m)
		}
		m.Close()
	}
}
