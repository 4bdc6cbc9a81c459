package cpu

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/batchd/batchd/model"
)

// countJob counts how often each index is visited.
type countJob struct{ seen []atomic.Int32 }

func (j *countJob) do(_, lo, hi int) {
	for i := lo; i < hi; i++ {
		j.seen[i].Add(1)
	}
}

// TestWorkersCoverEachIndexOnce: even and chunked runs visit every index
// exactly once, for sizes below, at and above a chunk and a thread count.
func TestWorkersCoverEachIndexOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		w := newWorkers(threads)
		for _, n := range []int{0, 1, 2, 5, 16, 17, 100, 1001} {
			for _, chunk := range []int{0, 1, 3, 4, 64} {
				j := &countJob{seen: make([]atomic.Int32, n)}
				if chunk == 0 {
					w.run(n, 4, j)
				} else {
					w.runChunked(n, chunk, j)
				}
				for i := range j.seen {
					if got := j.seen[i].Load(); got != 1 {
						t.Fatalf("threads %d n %d chunk %d: index %d visited %d times", threads, n, chunk, i, got)
					}
				}
			}
		}
		w.close()
	}
}

// TestWorkersWithCallerTakingShares: with one OS thread for Go code the
// workers mostly cannot run while the caller works, so it claims their
// shares itself, and late workers find them taken; every run still covers
// each index exactly once.
func TestWorkersWithCallerTakingShares(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w := newWorkers(4)
	defer w.close()
	for i := range 200 {
		n := 1 + i*7%300
		j := &countJob{seen: make([]atomic.Int32, n)}
		if i%2 == 0 {
			w.run(n, 1, j)
		} else {
			w.runChunked(n, 3, j)
		}
		for k := range j.seen {
			if got := j.seen[k].Load(); got != 1 {
				t.Fatalf("run %d n %d: index %d visited %d times", i, n, k, got)
			}
		}
	}
}

// panicJob panics on one index.
type panicJob struct{ at int }

func (j panicJob) do(_, lo, hi int) {
	if j.at >= lo && j.at < hi {
		panic("kernel bug")
	}
}

// TestWorkerPanicReachesTheCaller: a share that panics on a worker
// goroutine (which no one could recover, ending the process) panics the
// run's caller instead, after every share is done; the pool still works.
func TestWorkerPanicReachesTheCaller(t *testing.T) {
	w := newWorkers(3)
	defer w.close()
	for _, at := range []int{0, 50, 99} { // the caller's share and the workers'
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("index %d: no panic reached the caller", at)
				}
			}()
			w.run(100, 1, panicJob{at: at})
		}()
		j := &countJob{seen: make([]atomic.Int32, 100)}
		w.run(100, 1, j)
		for i := range j.seen {
			if j.seen[i].Load() != 1 {
				t.Fatalf("after a panic at %d: index %d visited %d times", at, i, j.seen[i].Load())
			}
		}
	}
}

// TestSplitQuantizationMatchesOneThread: an input large enough for acts.need
// to split across the pool is quantized as one thread quantizes it, in both
// activation forms, including a second, smaller input into the same acts.
func TestSplitQuantizationMatchesOneThread(t *testing.T) {
	w := newWorkers(3)
	defer w.close()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, shape := range []struct{ n, cols int }{{300, 256}, {129, 512}, {3, 256}} {
		x := make([]float32, shape.n*shape.cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		m := &model.Matrix{Rows: 1, Cols: shape.cols}
		for _, k := range []actKind{actQ8_0, actQ8_K} {
			var one, split acts
			split.pool = w
			one.need(x, shape.n, m, k)
			split.need(x, shape.n, m, k)
			if !reflect.DeepEqual(one.q8, split.q8) || !reflect.DeepEqual(one.q8k, split.q8k) {
				t.Fatalf("%d x %d, form %d: the split quantization differs from one thread's", shape.n, shape.cols, k)
			}
		}
	}
}
