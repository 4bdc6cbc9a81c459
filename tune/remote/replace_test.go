package remote

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReplaceFileKeepsModeOwnerAndLinks: a rewritten config keeps its
// mode (0440 stayed 0440, where tune --apply made it 0644 and readable by
// every user), its owner and group, and a symlink stays a link to it.
func TestReplaceFileKeepsModeOwnerAndLinks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "batchd.toml")
	if err := os.WriteFile(path, []byte("old"), 0o440); err != nil {
		t.Fatal(err)
	}
	owner := -1
	if os.Geteuid() == 0 {
		owner = 4321
		if err := os.Chown(path, owner, owner+1); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "current.toml")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceFile(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("content %q", b)
	}
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o440 {
		t.Errorf("mode %o, want 0440", st.Mode().Perm())
	}
	if sys := st.Sys().(*syscall.Stat_t); owner >= 0 && (int(sys.Uid) != owner || int(sys.Gid) != owner+1) {
		t.Errorf("owner %d:%d, want %d:%d", sys.Uid, sys.Gid, owner, owner+1)
	}
	if lst, err := os.Lstat(link); err != nil || lst.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link became %v (%v)", lst.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files left in the directory, want 2", len(ents))
	}
}
