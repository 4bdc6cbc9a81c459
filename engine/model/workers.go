package model

import (
	"runtime"
	"sync"
)

// workers is a persistent pool of goroutines that split a range of work
// items. The caller runs the first share itself, so one thread means no
// goroutine hand-off at all.
type workers struct {
	n     int
	tasks chan task
	wg    sync.WaitGroup
	once  sync.Once
}

type task struct {
	fn     func(lo, hi int)
	lo, hi int
	done   *sync.WaitGroup
}

func newWorkers(n int) *workers {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	w := &workers{n: n, tasks: make(chan task, n)}
	for range n - 1 {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for t := range w.tasks {
				t.fn(t.lo, t.hi)
				t.done.Done()
			}
		}()
	}
	return w
}

// run calls fn over [0, n) split into at most w.n contiguous shares of at
// least grain items each, and returns when all are done.
func (w *workers) run(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	shares := min(w.n, max(1, n/max(grain, 1)))
	if shares == 1 {
		fn(0, n)
		return
	}
	var done sync.WaitGroup
	done.Add(shares - 1)
	per := (n + shares - 1) / shares
	for s := 1; s < shares; s++ {
		lo := s * per
		hi := min(lo+per, n)
		if lo >= hi {
			done.Done()
			continue
		}
		w.tasks <- task{fn: fn, lo: lo, hi: hi, done: &done}
	}
	fn(0, min(per, n))
	done.Wait()
}

// close stops the goroutines; the pool must not be used after.
func (w *workers) close() {
	w.once.Do(func() {
		close(w.tasks)
		w.wg.Wait()
	})
}
