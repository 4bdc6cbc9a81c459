// Package cpuprof gives the benchmark commands a --cpuprofile flag.
package cpuprof

import (
	"errors"
	"os"
	"runtime/pprof"
)

// Start profiles the CPU into path until the returned stop is called; an
// empty path profiles nothing.
func Start(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
