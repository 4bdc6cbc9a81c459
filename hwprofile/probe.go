package hwprofile

import (
	"context"
	"fmt"
	"time"
)

// GPU is one NVIDIA device as NVML reports it.
type GPU struct {
	Index        int    `json:"index"`
	Name         string `json:"name"`
	UUID         string `json:"uuid"`
	MemTotal     uint64 `json:"mem_total_bytes"`
	MemFree      uint64 `json:"mem_free_bytes"`
	ComputeMajor int    `json:"compute_major"`
	ComputeMinor int    `json:"compute_minor"`
	UtilPercent  int    `json:"util_percent"`
}

// CPU is the host processor and memory.
type CPU struct {
	Model        string `json:"model"`
	Cores        int    `json:"cores"`
	AVX2         bool   `json:"avx2"`
	AVX512       bool   `json:"avx512"`
	FMA          bool   `json:"fma"`
	MemTotal     uint64 `json:"mem_total_bytes"`
	MemAvailable uint64 `json:"mem_available_bytes"` // MemAvailable, capped by a cgroup limit
}

// Detection is what the probers found.
type Detection struct {
	GPUs          []GPU    `json:"gpus"`
	Driver        string   `json:"driver_version,omitempty"`
	CUDA          string   `json:"cuda_version,omitempty"`
	CPU           CPU      `json:"cpu"`
	GPUProber     string   `json:"gpu_prober,omitempty"` // which prober found the GPUs
	Fallbacks     []string `json:"fallbacks,omitempty"`  // why earlier probers were not used
	CPUProbeError string   `json:"cpu_probe_error,omitempty"`
}

// GPUProber finds GPUs. Implementations: NVML; fakes in tests.
type GPUProber interface {
	Name() string
	// ProbeGPUs returns the devices, the driver and CUDA versions.
	ProbeGPUs(ctx context.Context) (gpus []GPU, driver, cuda string, err error)
}

// CPUProber reads the host.
type CPUProber interface {
	ProbeCPU(ctx context.Context) (CPU, error)
}

// DefaultTimeout bounds each probe.
const DefaultTimeout = 5 * time.Second

// Detect runs the GPU probers in order until one finds a device, keeping the
// reason each earlier one failed, then probes the CPU. Each probe runs under
// timeout; a probe that hangs is abandoned (its goroutine may linger).
func Detect(ctx context.Context, gpus []GPUProber, cpu CPUProber, timeout time.Duration) Detection {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var d Detection
	for _, p := range gpus {
		type res struct {
			gpus         []GPU
			driver, cuda string
			err          error
		}
		ch := make(chan res, 1)
		pctx, cancel := context.WithTimeout(ctx, timeout)
		go func() {
			g, dr, cu, err := p.ProbeGPUs(pctx)
			ch <- res{g, dr, cu, err}
		}()
		var r res
		select {
		case r = <-ch:
		case <-pctx.Done():
			r.err = fmt.Errorf("timed out after %v", timeout)
		}
		cancel()
		switch {
		case r.err != nil:
			d.Fallbacks = append(d.Fallbacks, fmt.Sprintf("%s: %v", p.Name(), r.err))
			continue
		case len(r.gpus) == 0:
			d.Fallbacks = append(d.Fallbacks, p.Name()+": no devices")
			continue
		}
		d.GPUs, d.Driver, d.CUDA, d.GPUProber = r.gpus, r.driver, r.cuda, p.Name()
		break
	}
	if cpu != nil {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c, err := cpu.ProbeCPU(cctx)
		d.CPU = c
		if err != nil {
			d.CPUProbeError = err.Error()
		}
	}
	return d
}
