// Package backends opens a backend by name: the one place that knows every
// backend package, so that the daemon and tools choose one in config
// ("cpu" today; a CUDA backend adds a case here) without importing it.
package backends

import (
	"fmt"
	"strings"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/cpu"
	"github.com/batchd/batchd/model"
)

// Names lists the backends this build has.
func Names() []string { return []string{"cpu"} }

// Open starts backend name ("" is "cpu") for m.
func Open(name string, m *model.Model, o backend.Options) (backend.Backend, error) {
	switch name {
	case "", "cpu":
		return cpu.New(m, o)
	}
	return nil, fmt.Errorf("backend %q: this build has %s", name, strings.Join(Names(), ", "))
}

// Describe says what a backend computes with, for logs ("" if it does not say).
func Describe(b backend.Backend) string {
	if d, ok := b.(interface{ Describe() string }); ok {
		return d.Describe()
	}
	return ""
}
