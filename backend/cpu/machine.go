package cpu

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// l2Bytes is one core's L2 as Linux's sysfs gives it (cpu0), or def where
// it cannot be read (other systems, containers without sysfs).
func l2Bytes(def int) int {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	for _, d := range dirs {
		level, _ := os.ReadFile(filepath.Join(d, "level"))
		size, _ := os.ReadFile(filepath.Join(d, "size"))
		s := strings.TrimSpace(string(size))
		if strings.TrimSpace(string(level)) != "2" || !strings.HasSuffix(s, "K") {
			continue
		}
		if k, err := strconv.Atoi(strings.TrimSuffix(s, "K")); err == nil && k > 0 {
			return k << 10
		}
	}
	return def
}

// MeasureReadBandwidth streams a buffer of size bytes with threads readers
// and returns the best of a few passes, in GB/s.
func MeasureReadBandwidth(size, threads int) float64 {
	threads = max(threads, 1)
	kn, _ := chooseKernels("")
	n := size / 4 / threads &^ 31
	bufs := make([][]float32, threads)
	for i := range bufs {
		bufs[i] = make([]float32, n)
		for j := range bufs[i] {
			bufs[i][j] = 1
		}
	}
	best := 0.0
	for range 5 {
		var wg sync.WaitGroup
		start := time.Now()
		for _, b := range bufs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				kn.vdot(b, b) // the second operand's loads hit L1: one stream from memory
			}()
		}
		wg.Wait()
		best = max(best, float64(n*4*threads)/time.Since(start).Seconds()/1e9)
	}
	return best
}

// MeasureFMAPeak runs register-only FMA chains on threads goroutines and
// returns GFLOP/s (0 without the SIMD kernels).
func MeasureFMAPeak(threads int) float64 {
	if !haveSIMD {
		return 0
	}
	const iters = 20_000_000
	return bestRate(threads, float64(iters)*160, func() { fmaPeakAVX2(iters) })
}

// bestRate runs work on threads goroutines at once, three times, and
// returns the best of units (what one run of work does) times threads a
// second, in billions.
func bestRate(threads int, units float64, work func()) float64 {
	threads = max(threads, 1)
	best := 0.0
	for range 3 {
		var wg sync.WaitGroup
		start := time.Now()
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work()
			}()
		}
		wg.Wait()
		best = max(best, units*float64(threads)/time.Since(start).Seconds()/1e9)
	}
	return best
}

// Int8Peak is what one core's plain AVX2 int8 inner loops give at best,
// in billions of products a second (MeasureInt8Peak).
type Int8Peak struct {
	Sign    float64 `json:"sign"`    // 8-bit values by the sign trick (Q8_0)
	Words   float64 `json:"words"`   // values as words by VPMADDWD (IQ4_XS)
	Nibbles float64 `json:"nibbles"` // 4-bit values summed in 16 bits (Q4_0, the K-quants)
}

// MeasureInt8Peak runs the plain AVX2 int8 kernels' inner loops alone, on
// registers and a buffer in L1, on threads goroutines: the ceiling their
// kernels approach, before memory and the float steps (zero without the
// SIMD kernels).
func MeasureInt8Peak(threads int) Int8Peak {
	var p Int8Peak
	if !haveSIMD {
		return p
	}
	const iters = 4_000_000
	for form, out := range []*float64{&p.Sign, &p.Words, &p.Nibbles} {
		products := 256.0
		if form == 2 {
			products = 1024
		}
		*out = bestRate(threads, iters*products, func() {
			var buf [256]byte
			int8PeakAVX2(form, &buf[0], iters)
		})
	}
	return p
}
