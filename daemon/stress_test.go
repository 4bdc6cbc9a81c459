package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/testing/synth"
)

// TestStressIdleConnectionsAndStreams: 2,000 connections that never say
// hello and 50 streaming clients against a daemon with a low descriptor
// limit. The daemon keeps serving, refuses the excess with a typed error,
// every accepted request ends with exactly one terminal event, and it exits
// cleanly on SIGTERM. "cap" hits max_connections before the descriptors run
// out; "emfile" runs out of descriptors first (accept backs off).
func TestStressIdleConnectionsAndStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	model := synth.TinyFile(t, 256)
	for _, tc := range []struct {
		name           string
		nofile         int
		maxConnections int
	}{{"cap", 512, 300}, {"emfile", 200, 1024}} {
		t.Run(tc.name, func(t *testing.T) {
			stress(t, model, tc.nofile, tc.maxConnections)
		})
	}
}

func stress(t *testing.T, model string, nofile, maxConns int) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "batchd.sock")
	cfg := filepath.Join(dir, "batchd.toml")
	conf := fmt.Sprintf("log_level = \"error\"\n[server]\nmax_connections = %d\nhello_timeout = \"1s\"\n"+
		"max_requests_per_user = 0\n", maxConns)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	cmd := exec.Command(self, "serve", "--config", cfg, "--model", model, "--socket", sock)
	cmd.Env = append(os.Environ(), "BATCHD_TEST_AS_DAEMON=1", fmt.Sprintf("BATCHD_TEST_NOFILE=%d", nofile))
	logs, exited := startChild(t, cmd)
	waitServing(t, sock, exited, logs)

	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	dialFailed := 0
	for range 2000 {
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err != nil {
			dialFailed++ // the kernel's backlog is full: refused before the daemon sees it
			continue
		}
		idle = append(idle, c)
	}

	var wg sync.WaitGroup
	var served, refusals atomic.Int64
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := streamOnce(sock, i, &refusals)
			if err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
				return
			}
			served.Add(int64(n))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case err := <-exited:
		t.Fatalf("daemon exited under load: %v\n%s", err, logs.String())
	default:
	}

	// Every idle connection the daemon took was answered with a typed error:
	// refused over the cap, or closed for saying no hello.
	typed := map[string]int{}
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		body, err := wire.ReadFrame(bufio.NewReader(c), wire.DefaultMaxFrame)
		if err != nil {
			continue // not accepted yet (in the backlog), or reset
		}
		var e wire.ErrorFrame
		if wire.Decode(body, &e) != nil || e.Type != wire.TypeError {
			t.Fatalf("idle connection got %+v", e)
		}
		typed[e.Code]++
	}
	t.Logf("nofile %d, max_connections %d: %d idle dials failed in the kernel, typed errors %v, client retries %d",
		nofile, maxConns, dialFailed, typed, refusals.Load())
	if nofile > maxConns && typed[wire.CodeResourceExhausted] == 0 {
		t.Error("no connection was refused over max_connections")
	}
	if typed[wire.CodeInvalidArgument] == 0 {
		t.Error("no idle connection was closed for want of a hello")
	}
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("daemon exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("daemon did not stop on SIGTERM\n%s", logs.String())
	}
}

func waitServing(t *testing.T, sock string, exited <-chan error, logs *syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("daemon exited: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not start\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// streamOnce connects (retrying while the daemon refuses it as over the
// cap), streams one request and checks it ends with exactly one done frame.
// It returns the tokens it got.
func streamOnce(sock string, i int, refusals *atomic.Int64) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		n, err := streamAttempt(sock, i)
		var e *wire.Error
		if errors.As(err, &e) && e.Code == wire.CodeResourceExhausted || isRetryableDial(err) {
			refusals.Add(1)
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("never admitted: %w", err)
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		return n, err
	}
}

func isRetryableDial(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func streamAttempt(sock string, i int) (int, error) {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(c)
	read := func() (wire.Header, []byte, error) {
		body, err := wire.ReadFrame(br, wire.DefaultMaxFrame)
		if err != nil {
			return wire.Header{}, nil, err
		}
		h, err := wire.DecodeHeader(body)
		if err == nil && h.Type == wire.TypeError {
			var e wire.ErrorFrame
			_ = wire.Decode(body, &e)
			return h, body, &wire.Error{Code: e.Code, Message: e.Message}
		}
		return h, body, err
	}
	if err := wire.WriteFrame(c, &wire.Hello{Type: wire.TypeHello, ID: 1, Version: wire.ProtocolVersion}); err != nil {
		return 0, err
	}
	if _, _, err := read(); err != nil {
		return 0, err
	}
	if err := wire.WriteFrame(c, &wire.Submit{Type: wire.TypeSubmit, ID: 7, Prompt: fmt.Sprintf("client %d", i),
		MaxTokens: 16, Temperature: 0.8, Seed: int64(i), Stream: true}); err != nil {
		return 0, err
	}
	toks, dones := 0, 0
	for dones == 0 {
		h, body, err := read()
		if err != nil {
			return toks, fmt.Errorf("after %d tokens: %w", toks, err)
		}
		switch h.Type {
		case wire.TypeAccepted:
		case wire.TypeToken:
			var tk wire.Token
			if err := wire.Decode(body, &tk); err != nil {
				return toks, err
			}
			toks += len(tk.Tokens)
		case wire.TypeDone:
			dones++
			var d wire.Done
			if err := wire.Decode(body, &d); err != nil {
				return toks, err
			}
			if d.FinishReason != "length" && d.FinishReason != "stop" {
				return toks, fmt.Errorf("finished %s: %s %s", d.FinishReason, d.Code, d.Message)
			}
		default:
			return toks, fmt.Errorf("unexpected %s frame", h.Type)
		}
	}
	// Nothing follows the terminal event.
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if h, _, err := read(); err == nil {
		return toks, fmt.Errorf("a %s frame after done", h.Type)
	}
	return toks, nil
}
