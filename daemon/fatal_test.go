package daemon

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchd/batchd/testing/synth"
)

// brokenListener fails for good once broken is closed.
type brokenListener struct {
	net.Listener
	broken chan struct{}
}

func (l *brokenListener) Accept() (net.Conn, error) {
	<-l.broken
	return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", syscall.EINVAL)}
}

// TestFatalServeErrorExitsNonZero: when accept fails for good, the daemon
// drains and returns an error (batchd exits 1, so Restart=on-failure acts)
// and removes its socket file; it returned nil (exit 0) and left the file.
func TestFatalServeErrorExitsNonZero(t *testing.T) {
	model := synth.TinyFile(t, 256)
	sock := filepath.Join(t.TempDir(), "b.sock")
	bl := &brokenListener{broken: make(chan struct{})}
	d := &Daemon{getenv: func(string) string { return "" }, ready: make(chan struct{}),
		wrapListener: func(ln net.Listener) net.Listener { bl.Listener = ln; return bl }}
	d.flags = ServeFlags{Model: model, Socket: sock, LogLevel: "error"}
	cfg, err := d.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- d.Run(context.Background(), cfg, log) }()
	select {
	case <-d.ready:
	case <-time.After(20 * time.Second):
		t.Fatal("not ready")
	}
	close(bl.broken)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "serving the socket") {
			t.Fatalf("run returned %v, want the serve error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon kept running after its listener broke")
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket file left behind: %v", err)
	}
}
