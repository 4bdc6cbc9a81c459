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
	"syscall"

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
		if c, err := net.Dial("unix", o.Path); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use by another process", o.Path)
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
	Groups   []uint32 // supplementary groups, looked up from the uid
}

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
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, cerr
	}
	p := Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid}
	if u, err := user.LookupId(strconv.Itoa(int(cred.Uid))); err == nil {
		if ids, err := u.GroupIds(); err == nil {
			for _, id := range ids {
				if g, err := strconv.Atoi(id); err == nil {
					p.Groups = append(p.Groups, uint32(g))
				}
			}
		}
	}
	return p, nil
}
