package chat

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WorkerArg is the argument that makes a program a template worker: the
// daemon starts its own binary as `batchd template-worker`, and a test
// binary that renders templates checks IsWorker in its TestMain.
const WorkerArg = "template-worker"

// workerEnv marks a worker's environment: a process that has it never
// starts workers itself (a test binary started as one by mistake would
// otherwise run its tests, and start workers, again).
const workerEnv = "BATCHD_TEMPLATE_WORKER"

// IsWorker reports whether args (os.Args) ask for a template worker.
func IsWorker(args []string) bool { return len(args) == 2 && args[1] == WorkerArg }

// request is one frame from the daemon to a worker.
type request struct {
	Op string `json:"op"` // "load" or "render"
	// load: the template, the limits the worker sets on itself, and
	// whether to find out if it takes content as typed parts (Probe) or
	// to take the parent's answer (Typed).
	Name   string `json:"name,omitempty"`
	Source string `json:"source,omitempty"`
	Probe  bool   `json:"probe,omitempty"`
	Typed  bool   `json:"typed,omitempty"`
	Memory int64  `json:"memory,omitempty"`
	Stack  int64  `json:"stack,omitempty"`
	Output int    `json:"output,omitempty"`
	// render: Input, bytes kept exact (base64 in JSON).
	Messages []byte   `json:"messages,omitempty"`
	Tools    []byte   `json:"tools,omitempty"`
	AGP      bool     `json:"agp,omitempty"`
	BOS      string   `json:"bos,omitempty"`
	EOS      string   `json:"eos,omitempty"`
	Now      int64    `json:"now,omitempty"`
	TextOnly []string `json:"text_only,omitempty"`
	Polyfill bool     `json:"polyfill,omitempty"`
	System   string   `json:"system,omitempty"`
	InSystem bool     `json:"in_system,omitempty"`
	Vars     []byte   `json:"vars,omitempty"`
}

// response is a worker's answer to one request.
type response struct {
	Text  []byte `json:"text,omitempty"`
	Typed bool   `json:"typed,omitempty"`
	Err   string `json:"err,omitempty"`
	Kind  string `json:"kind,omitempty"` // "compile", "messages", "template", "output"
}

// maxRequestFrame bounds a frame the worker reads: messages and tools,
// which the APIs bound far below this.
const maxRequestFrame = 256 << 20

// RunWorker serves load and render requests on stdin and stdout until
// stdin closes, and returns the exit status. It sets its own limits at the
// first load (stack, address space, one thread), so that a template that
// breaks them ends this process, never the daemon.
func RunWorker(stdin io.Reader, stdout io.Writer) int {
	r, w := bufio.NewReader(stdin), bufio.NewWriter(stdout)
	var t *compiled
	output := 0
	for {
		var req request
		if err := readFrame(r, &req, maxRequestFrame); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "template worker:", err)
			return 1
		}
		var resp response
		switch req.Op {
		case "load":
			if t == nil {
				limitSelf(req.Memory, req.Stack)
			}
			output = req.Output
			c, err := compile(req.Name, req.Source)
			if err != nil {
				resp.Err, resp.Kind = err.(*TemplateError).Problem, "compile"
				break
			}
			if req.Probe {
				c.typedContent = c.probe(false) == "" && c.probe(true) != ""
			} else {
				c.typedContent = req.Typed
			}
			t, resp.Typed = c, c.typedContent
		case "render":
			resp = renderRequest(t, &req, output)
		default:
			resp.Err, resp.Kind = fmt.Sprintf("unknown request %q", req.Op), "template"
		}
		if err := writeFrame(w, &resp); err != nil {
			return 1
		}
	}
}

func renderRequest(t *compiled, req *request, output int) response {
	if t == nil {
		return response{Err: "no template loaded", Kind: "template"}
	}
	out, err := t.renderInput(Input{Messages: req.Messages, Tools: req.Tools, AddGenerationPrompt: req.AGP,
		BOS: req.BOS, EOS: req.EOS, Now: time.Unix(0, req.Now), TextOnly: req.TextOnly,
		Polyfill: req.Polyfill, System: req.System, ToolsInSystem: req.InSystem, Vars: req.Vars})
	var te *TemplateError
	switch {
	case errors.Is(err, ErrInvalidMessages):
		return response{Err: strings.TrimPrefix(err.Error(), ErrInvalidMessages.Error()+": "), Kind: "messages"}
	case errors.As(err, &te):
		return response{Err: te.Problem, Kind: "template"}
	case err != nil:
		return response{Err: err.Error(), Kind: "template"}
	case output > 0 && len(out) > output:
		return response{Err: fmt.Sprintf("the rendered text is %d bytes, more than the budget of %d", len(out), output), Kind: "output"}
	}
	return response{Text: []byte(out)}
}

// limitSelf bounds this process: one thread for Go code, a stack of stack
// bytes (deeper recursion is a fatal "stack overflow": the worker exits),
// and an address space of memory bytes past what it has now (a bigger
// allocation is a fatal "out of memory"). Errors leave the parent's
// deadline as the bound.
func limitSelf(memory, stack int64) {
	runtime.GOMAXPROCS(1)
	if stack > 0 {
		debug.SetMaxStack(int(stack))
	}
	if memory <= 0 {
		return
	}
	debug.SetMemoryLimit(memory)
	if vm := vmSize(); vm > 0 {
		if raceEnabled {
			memory *= 8
		}
		lim := uint64(vm + memory)
		_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim})
	}
}

// vmSize reads this process's address space size (VmSize) in bytes.
func vmSize() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// readFrame reads one length-prefixed JSON frame into v.
func readFrame(r io.Reader, v any, maxBytes int) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if int64(size) > int64(maxBytes) {
		return fmt.Errorf("a frame of %d bytes, more than %d", size, maxBytes)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("a frame cut short: %w", err)
	}
	return json.Unmarshal(b, v)
}

// writeFrame writes v as one length-prefixed JSON frame and flushes.
func writeFrame(w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}
