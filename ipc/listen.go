package ipc

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxSocketPath is the room in sockaddr_un.sun_path, less the NUL.
const maxSocketPath = 107

// ListenOptions says how to create the socket.
type ListenOptions struct {
	Path  string
	Mode  fs.FileMode // default 0660
	Group string      // group name or gid owning the socket; "" keeps the process's
}

// Listen creates a Unix socket safely: it checks the path length, creates
// the directory, removes a stale socket (refusing to touch anything else or
// a socket that still answers), and sets the mode and group.
func Listen(o ListenOptions) (*net.UnixListener, error) {
	if len(o.Path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %q is %d bytes, the limit is %d", o.Path, len(o.Path), maxSocketPath)
	}
	if o.Mode == 0 {
		o.Mode = 0o660
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o755); err != nil {
		return nil, err
	}
	if st, err := os.Lstat(o.Path); err == nil {
		if st.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", o.Path)
		}
		// Only a refused connection means no one listens. A full backlog
		// (EAGAIN) is a live daemon too busy or hung to accept: taking its
		// socket over would leave it serving nobody.
		c, err := net.DialTimeout("unix", o.Path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use by another process", o.Path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%s may be in use by another process (connecting to it: %w); not removing it", o.Path, err)
		}
		if err := os.Remove(o.Path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	// Create with no access, then open it up: no window with a wider mode.
	old := syscall.Umask(0o777)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: o.Path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	if o.Group != "" {
		gid, err := lookupGroup(o.Group)
		if err == nil {
			err = os.Chown(o.Path, -1, gid)
		}
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("socket group %q: %w", o.Group, err)
		}
	}
	if err := os.Chmod(o.Path, o.Mode); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func lookupGroup(name string) (int, error) {
	if gid, err := strconv.Atoi(name); err == nil {
		return gid, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

// Peer is who is on the other end of a connection, from SO_PEERCRED.
type Peer struct {
	UID, GID uint32
	PID      int32
	// Groups are the peer process's own supplementary groups (what it holds
	// now, not what /etc/group lists for its user): SO_PEERGROUPS, or
	// /proc/PID/status on kernels before 4.13.
	Groups []uint32
}

// PeerCred reads the peer's credentials of a Unix connection: uid, gid,
// pid and the process's own supplementary groups.
func PeerCred(c net.Conn) (Peer, error) { return peerCred(c) }

// peerCred reads the peer's credentials of a Unix connection.
func peerCred(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, errors.New("not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var groups []uint32
	var cerr, gerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		groups, gerr = peerGroups(int(fd))
	}); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, cerr
	}
	p := Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid, Groups: groups}
	if gerr != nil { // ENOPROTOOPT before Linux 4.13
		if p.Groups, err = procGroups(cred.Pid); err != nil {
			return Peer{}, fmt.Errorf("supplementary groups: SO_PEERGROUPS: %v; /proc: %w", gerr, err)
		}
	}
	return p, nil
}

// peerGroups reads SO_PEERGROUPS: the groups the peer held when it connected.
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 64)
	for {
		n := uint32(len(buf) * 4)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch {
		case e == unix.ERANGE && int(n/4) > len(buf) && n/4 <= 1<<16: // NGROUPS_MAX
			buf = make([]uint32, n/4)
		case e != 0:
			return nil, e
		default:
			return buf[: n/4 : n/4], nil
		}
	}
}

// procGroups reads the Groups line of /proc/PID/status.
func procGroups(pid int32) ([]uint32, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Groups:")
		if !ok {
			continue
		}
		var out []uint32
		for _, f := range strings.Fields(rest) {
			g, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("/proc/%d/status Groups: %q", pid, f)
			}
			out = append(out, uint32(g))
		}
		return out, nil
	}
	return nil, fmt.Errorf("/proc/%d/status has no Groups line", pid)
}
