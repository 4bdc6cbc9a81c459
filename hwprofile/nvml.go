//go:build linux && cgo

package hwprofile

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML probes NVIDIA GPUs through libnvidia-ml (loaded at run time; its
// absence is an error, not a crash).
type NVML struct{}

// Name implements GPUProber.
func (NVML) Name() string { return "nvml" }

// ProbeGPUs implements GPUProber. After a failed Init it makes no other NVML
// call: doing so aborts the process.
func (NVML) ProbeGPUs(context.Context) ([]GPU, string, string, error) {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		return nil, "", "", fmt.Errorf("nvml init: %v", ret)
	}
	defer nvml.Shutdown()
	driver, _ := nvml.SystemGetDriverVersion()
	var cuda string
	if v, ret := nvml.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		cuda = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, driver, cuda, fmt.Errorf("nvml device count: %v", ret)
	}
	var gpus []GPU
	for i := range n {
		dev, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, driver, cuda, fmt.Errorf("nvml device %d: %v", i, ret)
		}
		g := GPU{Index: i}
		g.Name, _ = dev.GetName()
		g.UUID, _ = dev.GetUUID()
		if m, ret := dev.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemTotal, g.MemFree = m.Total, m.Free
		} else {
			return nil, driver, cuda, fmt.Errorf("nvml device %d memory: %v", i, ret)
		}
		g.ComputeMajor, g.ComputeMinor, _ = dev.GetCudaComputeCapability()
		if u, ret := dev.GetUtilizationRates(); ret == nvml.SUCCESS {
			g.UtilPercent = int(u.Gpu)
		}
		gpus = append(gpus, g)
	}
	return gpus, driver, cuda, nil
}

// DefaultGPUProbers returns the probers this build has.
func DefaultGPUProbers() []GPUProber { return []GPUProber{NVML{}} }
