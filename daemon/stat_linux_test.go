package daemon

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fstat returns f's "device:inode", as systemd writes JOURNAL_STREAM.
func fstat(f *os.File) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}
