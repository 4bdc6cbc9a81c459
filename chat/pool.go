package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pool runs one template's renders in worker processes: at most
// limits.Workers at once, one kept warm between renders. A worker that
// breaks a limit, or whose render is cancelled, is killed, never reused.
type pool struct {
	name, src string
	limits    Limits
	typed     bool

	mu     sync.Mutex
	idle   *worker
	live   int
	closed bool
	freed  chan struct{} // a worker came back or ended: one waiter may go
}

// worker is one worker process and its pipes.
type worker struct {
	cmd    *exec.Cmd
	in     *bufio.Writer
	inPipe io.Closer
	out    *bufio.Reader
	stderr *headBuffer
	exited chan struct{} // closed once the process is reaped
}

func newPool(name, src string, limits Limits) (*pool, error) {
	p := &pool{name: name, src: src, limits: limits, freed: make(chan struct{}, 1)}
	p.live = 1
	w, typed, err := p.spawn(true)
	if err != nil {
		p.live = 0
		var te *TemplateError
		if errors.As(err, &te) {
			te.Compile = true
		}
		return nil, err
	}
	p.typed = typed
	p.put(w)
	return p, nil
}

// executable is the program a worker runs: this one, by its open inode, so
// that an upgrade replacing the file on disk does not mix versions.
func executable() string {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe"
	}
	exe, _ := os.Executable()
	return exe
}

// spawn starts a worker and loads the template into it (probing, for the
// first, whether it takes content as typed parts).
func (p *pool) spawn(probe bool) (*worker, bool, error) {
	if os.Getenv(workerEnv) != "" {
		return nil, false, errors.New("chat template: a template worker does not start workers")
	}
	cmd := exec.Command(executable(), WorkerArg)
	cmd.Env = []string{workerEnv + "=1", "GOMAXPROCS=1", "GOTRACEBACK=none"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	w := &worker{cmd: cmd, stderr: &headBuffer{max: 4 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, false, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, err
	}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("chat template: starting a worker: %w", err)
	}
	go func() { _ = cmd.Wait(); close(w.exited) }()
	w.in, w.inPipe, w.out = bufio.NewWriter(in), in, bufio.NewReader(out)
	l := p.limits
	resp, err := p.call(context.Background(), w, &request{Op: "load", Name: p.name, Source: p.src, Probe: probe, Typed: p.typed,
		Memory: l.Memory, Stack: l.Stack, Output: l.Output})
	if err != nil {
		return nil, false, err
	}
	if resp.Err != "" {
		w.kill()
		return nil, false, &TemplateError{Name: p.name, Compile: true, Problem: resp.Err}
	}
	return w, resp.Typed, nil
}

// render takes a worker (waiting for one while all are busy), renders and
// gives it back.
func (p *pool) render(ctx context.Context, in Input) (string, error) {
	w, err := p.get(ctx)
	if err != nil {
		return "", err
	}
	resp, err := p.call(ctx, w, &request{Op: "render", Messages: in.Messages, Tools: in.Tools, AGP: in.AddGenerationPrompt,
		BOS: in.BOS, EOS: in.EOS, Now: in.Now.UnixNano(), TextOnly: in.TextOnly,
		Polyfill: in.Polyfill, System: in.System, InSystem: in.ToolsInSystem, Vars: in.Vars})
	if err != nil {
		p.done(nil)
		return "", err
	}
	p.put(w)
	switch resp.Kind {
	case "":
		return string(resp.Text), nil
	case "messages":
		return "", fmt.Errorf("%w: %s", ErrInvalidMessages, resp.Err)
	case "output":
		return "", &TemplateError{Name: p.name, Budget: "output", Problem: resp.Err}
	}
	return "", &TemplateError{Name: p.name, Problem: resp.Err}
}

// call sends one request and waits for its answer, the time limit, or
// ctx. On anything but an answer the worker is killed: it may be stuck in
// a loop, or half through a frame.
func (p *pool) call(ctx context.Context, w *worker, req *request) (*response, error) {
	type result struct {
		resp response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if r.err = writeFrame(w.in, req); r.err == nil {
			r.err = readFrame(w.out, &r.resp, p.limits.Output*2+(1<<20))
		}
		done <- r
	}()
	timer := time.NewTimer(p.limits.Time)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err == nil {
			return &r.resp, nil
		}
		w.kill()
		return nil, p.died(w, req.Op)
	case <-timer.C:
		w.kill()
		<-done
		return nil, p.budgetErr(req.Op, "time", fmt.Sprintf("ran past its time budget of %v", p.limits.Time))
	case <-ctx.Done():
		w.kill()
		<-done
		return nil, fmt.Errorf("chat template %s: rendering stopped: %w", p.name, ctx.Err())
	}
}

// died explains a worker that ended without answering, from what the Go
// runtime printed as it died.
func (p *pool) died(w *worker, op string) error {
	<-w.exited
	msg := w.stderr.String()
	switch {
	case strings.Contains(msg, "stack overflow") || strings.Contains(msg, "stack exceeds"):
		return p.budgetErr(op, "stack", fmt.Sprintf("recursed past its stack budget of %d MiB", p.limits.Stack>>20))
	case strings.Contains(msg, "out of memory") || strings.Contains(msg, "cannot allocate memory") ||
		strings.Contains(msg, "ThreadSanitizer failed to allocate") || strings.Contains(msg, "address space collisions"):
		return p.budgetErr(op, "memory", fmt.Sprintf("allocated past its memory budget of %d MiB", p.limits.Memory>>20))
	case strings.Contains(msg, "more than the budget"):
		return p.budgetErr(op, "output", msg)
	}
	if i := strings.Index(msg, "fatal error:"); i >= 0 {
		msg = strings.SplitN(msg[i:], "\n", 2)[0]
	}
	return &TemplateError{Name: p.name, Problem: "the renderer died: " + strings.TrimSpace(msg)}
}

func (p *pool) budgetErr(op, budget, problem string) error {
	if op == "load" {
		problem = "its test render " + problem
	}
	return &TemplateError{Name: p.name, Budget: budget, Problem: problem}
}

// get returns the warm worker, a new one while fewer than Workers run, or
// waits for one to come back.
func (p *pool) get(ctx context.Context) (*worker, error) {
	for {
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			return nil, fmt.Errorf("chat template %s: closed", p.name)
		case p.idle != nil:
			w := p.idle
			p.idle = nil
			p.mu.Unlock()
			select {
			case <-w.exited: // died while it waited (killed from outside): take another
				p.done(w)
				continue
			default:
			}
			return w, nil
		case p.live < p.limits.Workers:
			p.live++
			p.mu.Unlock()
			w, _, err := p.spawn(false)
			if err != nil {
				p.done(nil)
			}
			return w, err
		}
		p.mu.Unlock()
		select {
		case <-p.freed:
		case <-ctx.Done():
			return nil, fmt.Errorf("chat template %s: waiting for a worker: %w", p.name, ctx.Err())
		}
	}
}

// put keeps w warm if none is, else ends it.
func (p *pool) put(w *worker) {
	p.mu.Lock()
	if p.idle == nil && !p.closed {
		p.idle = w
		p.mu.Unlock()
		p.wake()
		return
	}
	p.mu.Unlock()
	p.done(w)
}

// done counts a worker out (killing w, if any) and wakes a waiter.
func (p *pool) done(w *worker) {
	if w != nil {
		w.kill()
	}
	p.mu.Lock()
	p.live--
	p.mu.Unlock()
	p.wake()
}

func (p *pool) wake() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	w := p.idle
	p.idle = nil
	p.mu.Unlock()
	if w != nil {
		p.done(w)
	}
}

// kill ends the process at once; closing stdin first lets a healthy one
// see EOF, but a stuck one is not waited for.
func (w *worker) kill() {
	_ = w.inPipe.Close()
	_ = w.cmd.Process.Kill()
}

// headBuffer keeps the first max bytes written to it: where the Go
// runtime says why it died.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *headBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *headBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
