package ipc

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/batchd/batchd/ipc/wire"
)

// TestMain lets the test binary act as a client with other credentials:
// with BATCHD_IPC_HELLO=SOCKET it connects, says hello, and exits 0 when
// admitted, 3 when refused and 1 otherwise.
func TestMain(m *testing.M) {
	if sock := os.Getenv("BATCHD_IPC_HELLO"); sock != "" {
		c, err := net.DialTimeout("unix", sock, 5*time.Second)
		if err != nil {
			os.Exit(1)
		}
		_, err = helloRaw(c)
		switch {
		case err == nil:
			os.Exit(0)
		case errors.Is(err, wire.ErrPermissionDenied):
			os.Exit(3)
		}
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestPeerGroupsAreTheProcesses: access by group follows the groups the
// connecting process holds. A process given a supplementary group was
// refused (its user is in no such group in /etc/group); one that dropped
// its groups was admitted by the user's /etc/group entry.
func TestPeerGroupsAreTheProcesses(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start a client with other credentials")
	}
	// A directory nobody can traverse (t.TempDir's parent is private).
	dir, err := os.MkdirTemp("", "batchd-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := Listen(ListenOptions{Path: sock, Mode: 0o666})
	if err != nil {
		t.Fatal(err)
	}
	const group = 4242 // in no /etc/group entry
	s := NewServer(Options{Backend: &fakeBackend{}, Policy: Policy{AllowedGIDs: []uint32{group}}})
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	// The child runs as nobody: give it a copy of this binary it may execute
	// (go test's build directory is private).
	exe, _ := os.Executable()
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(dir, "ipc.test")
	if err := os.WriteFile(self, b, 0o755); err != nil {
		t.Fatal(err)
	}
	hello := func(groups []uint32) int {
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "BATCHD_IPC_HELLO="+sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: groups}}
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	if code := hello([]uint32{group}); code != 0 {
		t.Errorf("a process holding group %d: exit %d, want admitted", group, code)
	}
	if code := hello([]uint32{}); code != 3 {
		t.Errorf("a process without the group: exit %d, want refused", code)
	}
}
