package hwprofile

import (
	"bufio"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/cpu"
)

// HostCPU reads /proc/cpuinfo, /proc/meminfo and the cgroup memory limit.
type HostCPU struct {
	Root string // filesystem root, "" for "/"; tests point it at a fake tree
}

// ProbeCPU implements CPUProber.
func (h HostCPU) ProbeCPU(context.Context) (CPU, error) {
	c := CPU{Cores: runtime.NumCPU(), AVX2: cpu.X86.HasAVX2, AVX512: cpu.X86.HasAVX512F, FMA: cpu.X86.HasFMA}
	var errs []error
	if f, err := os.Open(h.Root + "/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				c.Model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	} else {
		errs = append(errs, err)
	}
	mem, err := readMeminfo(h.Root + "/proc/meminfo")
	if err != nil {
		errs = append(errs, err)
	}
	c.MemTotal, c.MemAvailable = mem["MemTotal"], mem["MemAvailable"]
	if limit, ok := cgroupLimit(h.Root); ok {
		c.MemTotal = min(c.MemTotal, limit.max)
		if limit.max > limit.used {
			c.MemAvailable = min(c.MemAvailable, limit.max-limit.used)
		}
	}
	return c, errors.Join(errs...)
}

func readMeminfo(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		out[k] = n
	}
	return out, sc.Err()
}

type memLimit struct{ max, used uint64 }

// cgroupLimit reads a cgroup v2 memory limit, as containers and systemd's
// MemoryMax= set it.
func cgroupLimit(root string) (memLimit, bool) {
	b, err := os.ReadFile(root + "/sys/fs/cgroup/memory.max")
	if err != nil {
		return memLimit{}, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return memLimit{}, false
	}
	max, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return memLimit{}, false
	}
	var used uint64
	if b, err := os.ReadFile(root + "/sys/fs/cgroup/memory.current"); err == nil {
		used, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	return memLimit{max, used}, true
}
