//go:build !linux || !cgo

package hwprofile

// DefaultGPUProbers returns the probers this build has: none without cgo,
// which NVML needs.
func DefaultGPUProbers() []GPUProber { return nil }
