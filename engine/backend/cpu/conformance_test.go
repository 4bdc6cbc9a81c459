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
