// Package daemontest runs a real batchd daemon in process for tests of
// other packages (the command-line tools, the clients, the serving layer
// behind its transports): its sockets in a temporary folder, its config a
// file there, its log captured, stopped when the test ends.
package daemontest

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/daemon"
)

// Options are what a test daemon serves.
type Options struct {
	// Config is TOML written to batchd.toml beside the sockets ("": no file).
	Config string
	// Flags override the config as `batchd serve`'s flags do. Socket is
	// always the temporary one; HTTPSocket "http" serves the HTTP API on a
	// socket there. LogLevel defaults to debug.
	Flags daemon.ServeFlags
}

// Daemon is a daemon serving in process until its test ends.
type Daemon struct {
	*daemon.Daemon
	Socket     string // the msgpack socket
	HTTPSocket string // "" without the HTTP API
	ConfigPath string // "" without a file
	log        *Log
	stop       func()
}

// Log is a goroutine-safe log sink.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was logged so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start starts a daemon and returns once it is ready; a daemon that exits
// or takes over 30 s fails the test. The environment is empty (no
// BATCHD_* variable of the test's own reaches it).
func Start(t testing.TB, o Options) *Daemon {
	t.Helper()
	dir := t.TempDir()
	f := o.Flags
	f.Socket = filepath.Join(dir, "batchd.sock")
	if f.LogLevel == "" {
		f.LogLevel = "debug"
	}
	if f.HTTPSocket != "" {
		f.HTTPSocket = filepath.Join(dir, "http.sock")
	}
	if o.Config != "" {
		f.Config = filepath.Join(dir, "batchd.toml")
		if err := os.WriteFile(f.Config, []byte(o.Config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, cfg, err := daemon.New(f, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	log := &Log{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, cfg, log) }()
	select {
	case <-d.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("daemon exited: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("daemon did not become ready")
	}
	td := &Daemon{Daemon: d, Socket: f.Socket, HTTPSocket: f.HTTPSocket, ConfigPath: f.Config, log: log}
	var once sync.Once
	td.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("daemon: %v", err)
			}
		})
	}
	t.Cleanup(td.stop)
	return td
}

// Stop stops the daemon now (it stops at the test's end otherwise).
func (td *Daemon) Stop() { td.stop() }

// Log is what the daemon logged so far.
func (td *Daemon) Log() string { return td.log.String() }

// Dial connects a client to the msgpack socket, closed at the test's end.
func (td *Daemon) Dial(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), td.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// HTTP is a client of the HTTP API's socket (any host name reaches it).
func (td *Daemon) HTTP() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", td.HTTPSocket)
	}}}
}
