package ipc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batchd/batchd/ipc/wire"
)

// flakyListener fails its first accepts with err.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
	err   error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "unix", Err: l.err}
	}
	return l.Listener.Accept()
}

func listenTemp(t *testing.T) (*net.UnixListener, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(ListenOptions{Path: sock, Mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	return ln, sock
}

func hello(t *testing.T, c net.Conn) (string, error) {
	t.Helper()
	return helloRaw(c)
}

// helloRaw says hello and returns the reply's type, or its error.
func helloRaw(c net.Conn) (string, error) {
	// A refused connection may be closed before the hello is written
	// (EPIPE); the error frame sent before the close is still readable, as
	// the clients do.
	werr := wire.WriteFrame(c, &wire.Hello{Type: wire.TypeHello, ID: 1, Version: wire.ProtocolVersion})
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	body, err := wire.ReadFrame(bufio.NewReader(c), wire.DefaultMaxFrame)
	if err != nil {
		if werr != nil {
			return "", werr
		}
		return "", err
	}
	var e wire.ErrorFrame
	if err := wire.Decode(body, &e); err != nil {
		return "", err
	}
	if e.Type == wire.TypeError {
		return e.Type, &wire.Error{Code: e.Code, Message: e.Message}
	}
	return e.Type, nil
}

// TestAcceptBacksOffOnEMFILE: running out of descriptors used to end Serve
// (and with it the daemon, exit 0); now it backs off and serves on.
func TestAcceptBacksOffOnEMFILE(t *testing.T) {
	ln, sock := listenTemp(t)
	fl := &flakyListener{Listener: ln, err: os.NewSyscallError("accept4", syscall.EMFILE)}
	fl.fails.Store(5)
	s := NewServer(Options{Backend: &fakeBackend{}})
	served := make(chan error, 1)
	go func() { served <- s.Serve(fl) }()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if typ, err := hello(t, c); err != nil || typ != wire.TypeHello {
		t.Fatalf("hello after EMFILE: %s %v", typ, err)
	}
	s.Close()
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
}

// TestFatalAcceptErrorRemovesSocket: an error that will not pass is
// returned, and the socket file does not outlive the listener.
func TestFatalAcceptErrorRemovesSocket(t *testing.T) {
	ln, sock := listenTemp(t)
	fl := &flakyListener{Listener: ln, err: os.NewSyscallError("accept4", syscall.EBADF)}
	fl.fails.Store(1)
	s := NewServer(Options{Backend: &fakeBackend{}})
	defer s.Close()
	if err := s.Serve(fl); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Serve: %v, want EBADF", err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file left behind: %v", err)
	}
}

// TestMaxConnections: connections past the cap get a typed error and are
// closed; the others keep working, and a freed slot is taken again.
func TestMaxConnections(t *testing.T) {
	ln, sock := listenTemp(t)
	s := NewServer(Options{Backend: &fakeBackend{}, MaxConnections: 2})
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := hello(t, c); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	// Say hello only after the server has hung up, so the write fails with
	// EPIPE (CI once hit that by chance): the error frame must still be read.
	for s.Refused() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	_, err = hello(t, c)
	c.Close()
	if !errors.Is(err, wire.ErrResourceExhausted) {
		t.Fatalf("third connection: %v, want resource_exhausted", err)
	}
	if s.Refused() != 1 {
		t.Fatalf("refused %d", s.Refused())
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		_, err = hello(t, c)
		c.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot never freed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHelloTimeout: a connection that never says hello is told so and closed.
func TestHelloTimeout(t *testing.T) {
	ln, sock := listenTemp(t)
	s := NewServer(Options{Backend: &fakeBackend{}, HelloTimeout: 100 * time.Millisecond})
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	body, err := wire.ReadFrame(br, wire.DefaultMaxFrame)
	if err != nil {
		t.Fatalf("no error frame before the hang-up: %v", err)
	}
	var e wire.ErrorFrame
	if err := wire.Decode(body, &e); err != nil || e.Code != wire.CodeInvalidArgument {
		t.Fatalf("frame %+v %v", e, err)
	}
	if _, err := wire.ReadFrame(br, wire.DefaultMaxFrame); !errors.Is(err, io.EOF) {
		t.Fatalf("connection still open after the hello timeout: %v", err)
	}
}

// TestReadFrameGrowsWithTheBytes: a 1 MiB declared length with 5 bytes sent
// allocated the whole MiB (1,500 such connections cost 1.2 GB).
func TestReadFrameGrowsWithTheBytes(t *testing.T) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<20)
	in := append(hdr[:], 1, 2, 3, 4, 5)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := wire.ReadFrame(bufio.NewReader(bytes.NewReader(in)), 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("ReadFrame: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 64<<10 {
		t.Fatalf("a 5-byte body allocated %d bytes", per)
	}
	body, err := wire.ReadFrame(bufio.NewReader(bytes.NewReader(append(binary.BigEndian.AppendUint32(nil, 100<<10),
		make([]byte, 100<<10)...))), 1<<20)
	if err != nil || len(body) != 100<<10 {
		t.Fatalf("a whole 100 KiB frame: %d bytes, %v", len(body), err)
	}
}

// TestListenKeepsABusySocket: a socket whose backlog is full (a hung
// daemon) answers connect with EAGAIN; it was unlinked and taken over.
func TestListenKeepsABusySocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "busy.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	// Fill the backlog: never accepted, so connects soon fail with EAGAIN.
	full := false
	for range 16 {
		c, err := net.DialTimeout("unix", sock, 100*time.Millisecond)
		if err != nil {
			full = true
			break
		}
		defer c.Close()
	}
	if !full {
		t.Skip("could not fill the listen backlog")
	}
	if _, err := Listen(ListenOptions{Path: sock}); err == nil {
		t.Fatal("Listen took over a socket that a live process holds")
	}
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the busy socket was removed: %v", err)
	}
}

func TestRateLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	r := rateLimiter{every: time.Second, now: func() time.Time { return now }}
	if _, ok := r.allow("a"); !ok {
		t.Fatal("first warning held")
	}
	for range 5 {
		if _, ok := r.allow("a"); ok {
			t.Fatal("repeat let through")
		}
	}
	if _, ok := r.allow("b"); !ok {
		t.Fatal("another key held")
	}
	now = now.Add(time.Second)
	if n, ok := r.allow("a"); !ok || n != 5 {
		t.Fatalf("after the interval: %d %v, want 5 held", n, ok)
	}
}
