package cpu

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// rangeJob is work over an index range; jobs are long-lived values so that
// handing one to the pool allocates nothing.
type rangeJob interface {
	do(share, lo, hi int) // share numbers the split, 0..threads-1
}

// spinFor is how long an idle worker polls for the next job before it
// parks: a forward pass hands out work every few microseconds, and waking a
// parked goroutine costs more than that.
const spinFor = 200 * time.Microsecond

// workers is a persistent pool that splits index ranges across threads. The
// caller runs share 0 itself. run is called from one goroutine at a time.
//
// Shares are claimed, not assigned: a worker that has not woken by the time
// the caller is done with its own share finds it taken, because the caller
// runs every unclaimed share itself. On a shared machine, where the OS may
// not run a worker thread for a whole time slice, a step then never waits
// for a thread that has not started.
type workers struct {
	n      int
	gen    atomic.Uint64   // bumped for every run; workers wait for a change
	taken  []atomic.Uint64 // per share: the last gen it was claimed in
	done   atomic.Int32    // shares of the current run finished
	closed atomic.Bool
	job    rangeJob
	per    int
	total  int
	chunk  int          // > 0: shares claim chunks of this size from next
	next   atomic.Int64 // the next unclaimed index of a chunked run
	// failed holds a share's panic until the run ends, when the caller's
	// goroutine panics with it: a worker's own panic could not be
	// recovered by anyone and would end the process.
	failed atomic.Pointer[sharePanic]
	mu     sync.Mutex
	cond   *sync.Cond
	wg     sync.WaitGroup
}

func newWorkers(n int) *workers {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	w := &workers{n: n, taken: make([]atomic.Uint64, n)}
	w.cond = sync.NewCond(&w.mu)
	for id := 1; id < n; id++ {
		w.wg.Add(1)
		go w.loop(id)
	}
	return w
}

func (w *workers) loop(id int) {
	defer w.wg.Done()
	var seen uint64
	for {
		seen = w.wait(seen)
		if w.closed.Load() {
			return
		}
		if w.claim(seen, id) {
			w.share(id)
			w.done.Add(1)
		}
	}
}

// claim takes share id of run gen unless it is taken. A run ends only once
// every share is claimed and done, so a worker that wakes late, for a run
// already over, finds its share taken; and a successful claim means the run
// is waiting for this share, its fields stable until the share is done.
func (w *workers) claim(gen uint64, id int) bool {
	c := w.taken[id].Load()
	return c < gen && w.taken[id].CompareAndSwap(c, gen)
}

// wait returns the next generation after seen: it spins briefly, then parks.
func (w *workers) wait(seen uint64) uint64 {
	start := time.Now()
	for i := 0; ; i++ {
		if g := w.gen.Load(); g != seen {
			return g
		}
		if i&255 == 255 {
			if time.Since(start) > spinFor {
				break
			}
			// A spinning worker holds a P: let a runnable goroutine (an
			// HTTP handler, a metrics scrape) have it rather than wait
			// for the runtime's 10 ms preemption.
			runtime.Gosched()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.gen.Load() == seen {
		w.cond.Wait()
	}
	return w.gen.Load()
}

// run calls job over [0, n) split into at most w.n contiguous shares of at
// least grain items each, and returns when all are done.
func (w *workers) run(n, grain int, job rangeJob) {
	if n <= 0 {
		return
	}
	shares := min(w.n, max(1, n/max(grain, 1)))
	if shares == 1 {
		job.do(0, 0, n)
		return
	}
	w.job, w.per, w.total, w.chunk = job, (n+shares-1)/shares, n, 0
	w.start()
}

// runChunked calls job over [0, n) in chunks of chunk items that the
// threads claim as they go: for work whose items differ in cost (attention
// over sequences of different lengths), where even shares would leave one
// thread waiting for the other.
func (w *workers) runChunked(n, chunk int, job rangeJob) {
	if n <= 0 {
		return
	}
	if n <= chunk || w.n == 1 {
		job.do(0, 0, n)
		return
	}
	w.job, w.total, w.chunk = job, n, chunk
	w.next.Store(0)
	w.start()
}

// start publishes the run and wakes the workers, then runs share 0 and every
// share no worker has claimed yet, and waits for the shares workers took.
func (w *workers) start() {
	w.done.Store(0)
	g := w.gen.Load() + 1
	w.mu.Lock()
	w.gen.Store(g)
	w.cond.Broadcast()
	w.mu.Unlock()
	for id := range w.n {
		if w.claim(g, id) {
			w.share(id)
			w.done.Add(1)
		}
	}
	for w.done.Load() != int32(w.n) {
		runtime.Gosched()
	}
	w.job = nil
	if p := w.failed.Swap(nil); p != nil {
		panic(p)
	}
}

// sharePanic is a share's panic and where it happened.
type sharePanic struct {
	value any
	stack string
}

func (p *sharePanic) String() string {
	return fmt.Sprintf("%v (in a worker share)\n%s", p.value, p.stack)
}

// share runs thread id's part of the current job.
func (w *workers) share(id int) {
	defer func() {
		if r := recover(); r != nil {
			w.failed.CompareAndSwap(nil, &sharePanic{value: r, stack: string(debug.Stack())})
		}
	}()
	if w.chunk == 0 {
		if lo := id * w.per; lo < w.total {
			w.job.do(id, lo, min(lo+w.per, w.total))
		}
		return
	}
	for {
		lo := int(w.next.Add(int64(w.chunk))) - w.chunk
		if lo >= w.total {
			return
		}
		w.job.do(id, lo, min(lo+w.chunk, w.total))
	}
}

// close stops the goroutines; the pool must not be used after.
func (w *workers) close() {
	if w.closed.Swap(true) {
		return
	}
	w.mu.Lock()
	w.gen.Add(1)
	w.cond.Broadcast()
	w.mu.Unlock()
	w.wg.Wait()
}
