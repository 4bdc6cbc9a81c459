package remote

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ReplaceFile writes b over path atomically and keeps what the file was:
// its mode and its owner and group (a config holding API keys is often
// 0440 root:batchd, and a rewrite must not leave it 0644 root:root for
// every user to read), and, where path is a symbolic link, the link (the
// file it points to is replaced). The new bytes go to a temporary file
// beside it, created with no access for anyone, given the mode and
// owner, synced, then renamed over the file. If the owner cannot be kept
// (not root), nothing is written.
func ReplaceFile(path string, b []byte) error {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(target)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner to keep", target)
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tune-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok = false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0); err != nil {
		return err
	}
	if int(sys.Uid) != os.Geteuid() || int(sys.Gid) != os.Getegid() {
		if err := f.Chown(int(sys.Uid), int(sys.Gid)); err != nil {
			return fmt.Errorf("%s belongs to %d:%d and this process cannot give a new copy that owner: %w", target, sys.Uid, sys.Gid, err)
		}
	}
	if _, err := f.Write(b); err != nil {
		return err
	}
	if err := f.Chmod(st.Mode().Perm()); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		return err
	}
	ok = true
	return nil
}
