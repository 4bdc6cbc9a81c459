package daemon

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batchd/batchd/testing/synth"
)

// TestReloadNeverWidensAccessByAccident: truncating the config to zero bytes
// applied an all-defaults config (no allowed users: anyone admitted), and a
// file written in two chunks 300 ms apart applied its first half. Now an
// empty file is rejected and a reload waits for the file to settle; at no
// moment is the allowed-users list empty.
func TestReloadNeverWidensAccessByAccident(t *testing.T) {
	const full = "[server]\nallowed_users = [\"12345\"]\n[engine]\nmax_queue = 7\n"
	td := startSynthDaemon(t, full)
	path := td.d.flags.Config
	snapshot := func() ([]uint32, int, int, int) {
		td.d.mu.Lock()
		defer td.d.mu.Unlock()
		pol := td.d.srv.Policy()
		return pol.AllowedUIDs, td.d.cfg.Engine.MaxQueue, td.d.reloads, td.d.reloadErrs
	}
	// Watch the live policy the whole time.
	stop := make(chan struct{})
	widened := make(chan []uint32, 1)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if uids, _, _, _ := snapshot(); !slices.Equal(uids, []uint32{12345}) {
				select {
				case widened <- uids:
				default:
				}
			}
		}
	}()
	defer close(stop)
	waitUntil := func(what string, ok func(reloads, errs, maxQueue int) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			_, mq, r, e := snapshot()
			if ok(r, e, mq) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: reloads %d, errors %d, max_queue %d", what, r, e, mq)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// 1. Truncated to zero bytes: rejected, the old config stays.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	waitUntil("empty file", func(r, e, mq int) bool { return e == 1 })
	if _, mq, r, _ := snapshot(); r != 0 || mq != 7 {
		t.Fatalf("empty file applied: reloads %d, max_queue %d", r, mq)
	}

	// 2. Written in two chunks 300 ms apart: only the whole file applies.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("[server]\nmax_requests_per_user = 3\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := f.WriteString("allowed_users = [\"12345\"]\n[engine]\nmax_queue = 9\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	waitUntil("two-chunk write", func(r, e, mq int) bool { return mq == 9 })
	time.Sleep(reloadDebounce + 2*reloadSettle) // any late reload would show now
	if _, _, r, e := snapshot(); r != 1 || e != 1 {
		t.Fatalf("two-chunk write: %d reloads and %d errors, want 1 and 1 (the half file must not apply)", r, e)
	}
	select {
	case uids := <-widened:
		t.Fatalf("allowed users became %v during the reloads", uids)
	default:
	}
}

// TestRestartFieldsKeepRunningValues: a field that needs a restart is
// reported, keeps its running value, and stays reported on the next reload
// of the same file. idle_exit_after, metrics_listen and the channel
// settings were reported yet overwritten, so the next reload cleared the
// report while the old values still ran.
func TestRestartFieldsKeepRunningValues(t *testing.T) {
	td := startSynthDaemon(t, "idle_exit_after = \"0s\"\n[engine]\nmax_queue = 5\n")
	edited := "idle_exit_after = \"1h\"\n[engine]\nmax_queue = 6\n[channels.realtime]\nshare = 0.25\n"
	want := []string{"idle_exit_after", "channels.realtime.share"}
	for round := range 2 {
		if err := os.WriteFile(td.d.flags.Config, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		td.d.reload("test", nil, true)
		td.d.mu.Lock()
		restart, idle, share, mq := td.d.restart, td.d.cfg.IdleExitAfter.Duration, td.d.cfg.Channels["realtime"].Share,
			td.d.cfg.Engine.MaxQueue
		td.d.mu.Unlock()
		for _, w := range want {
			if !slices.Contains(restart, w) {
				t.Fatalf("round %d: restart_needed %v lacks %s", round, restart, w)
			}
		}
		if idle != 0 || share != 0.5 || mq != 6 {
			t.Fatalf("round %d: running idle_exit_after %v, realtime share %v (want the old 0s, 0.5); max_queue %d (live: 6)",
				round, idle, share, mq)
		}
	}
}

// TestFileChangeNeverWidensAccess: a config file cut short just before its
// allowed_users line still parses, and applied it admitted everyone,
// raised max_requests_per_user from 8 to the default 256 and dropped every
// API key. A file change may narrow access; one that widens it is held
// (logged, and in stats' reload_held) until an explicit reload applies it.
func TestFileChangeNeverWidensAccess(t *testing.T) {
	const head = "[engine]\nmax_queue = 7\n[server]\n"
	const full = head + "allowed_users = [\"0\", \"1002\"]\nmax_requests_per_user = 8\n[server.api_keys]\n\"0\" = \"0123456789abcdef0123\"\n"
	td := startSynthDaemon(t, full)
	path := td.d.flags.Config
	live := func() (uids []uint32, cap int, keys int, held []string, reloads int) {
		td.d.mu.Lock()
		defer td.d.mu.Unlock()
		s := td.d.cfg.Resolved()
		return s.Policy.AllowedUIDs, s.Policy.MaxRequestsPerUser, len(s.APIKeys), td.d.held, td.d.reloads
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	// Cut short: held, nothing changes, stats say why.
	if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the cut file to be held", func() bool { _, _, _, held, _ := live(); return len(held) > 0 })
	uids, cap, keys, held, reloads := live()
	if !slices.Equal(uids, []uint32{0, 1002}) || cap != 8 || keys != 1 || reloads != 0 {
		t.Fatalf("the cut file applied: allowed %v, cap %d, %d keys, %d reloads", uids, cap, keys, reloads)
	}
	for _, want := range []string{"allowed_users", "max_requests_per_user 8 -> 256", "every key dropped"} {
		if !slices.ContainsFunc(held, func(h string) bool { return strings.Contains(h, want) }) {
			t.Errorf("held %q lacks %q", held, want)
		}
	}
	if st := (frontend{td.d.svc, td.d}).Stats(); !slices.Equal(st.ReloadHeld, held) {
		t.Errorf("stats reload_held %q, want %q", st.ReloadHeld, held)
	}
	if !strings.Contains(td.log.String(), "widens access") {
		t.Errorf("not logged:\n%s", td.log.String())
	}
	// Narrowing applies at once and clears the hold: uid 1002 leaves, the cap drops.
	narrower := strings.Replace(strings.Replace(full, `, "1002"`, "", 1), "= 8", "= 4", 1)
	if err := os.WriteFile(path, []byte(narrower), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the narrowing to apply", func() bool { _, _, _, _, r := live(); return r == 1 })
	if uids, cap, keys, held, _ := live(); !slices.Equal(uids, []uint32{0}) || cap != 4 || keys != 1 || len(held) != 0 {
		t.Fatalf("after narrowing: allowed %v, cap %d, %d keys, held %q", uids, cap, keys, held)
	}
	// An explicit reload applies a widening.
	if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the widening to be held", func() bool { _, _, _, held, _ := live(); return len(held) > 0 })
	if res := td.d.reload("test", nil, true); !res.Applied {
		t.Fatalf("explicit reload: %+v", res)
	}
	if uids, cap, keys, held, _ := live(); len(uids) != 0 || cap != 256 || keys != 0 || len(held) != 0 {
		t.Fatalf("after the explicit reload: allowed %v, cap %d, %d keys, held %q", uids, cap, keys, held)
	}
}

// TestOnlyTheConfigFileReloads: creating, writing and renaming other files
// in the config's directory reloaded the config each time; now only a
// change to the file, or to where its path leads (a ConfigMap's ..data
// symlink swap), does.
func TestOnlyTheConfigFileReloads(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"v1", "v2"} {
		if err := os.MkdirAll(filepath.Join(dir, v), 0o755); err != nil {
			t.Fatal(err)
		}
		body := "[engine]\nmax_queue = " + map[string]string{"v1": "5", "v2": "6"}[v] + "\n"
		if err := os.WriteFile(filepath.Join(dir, v, "batchd.toml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// dir/batchd.toml -> ..data/batchd.toml, ..data -> v1: a ConfigMap's layout.
	if err := os.Symlink("v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "batchd.toml"), filepath.Join(dir, "batchd.toml")); err != nil {
		t.Fatal(err)
	}
	td := startDaemonFlags(t, "", ServeFlags{Model: synth.TinyFile(t, 256), Config: filepath.Join(dir, "batchd.toml")})
	counts := func() (int, int, int) {
		td.d.mu.Lock()
		defer td.d.mu.Unlock()
		return td.d.reloads, td.d.reloadErrs, td.d.cfg.Engine.MaxQueue
	}
	other := filepath.Join(dir, "notes.txt")
	for i := range 3 {
		if err := os.WriteFile(other, []byte(strings.Repeat("x", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(other, other+".bak"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2*reloadDebounce + 2*reloadSettle)
	if r, e, mq := counts(); r != 0 || e != 0 || mq != 5 {
		t.Fatalf("other files: %d reloads, %d errors, max_queue %d", r, e, mq)
	}
	// Swap ..data to v2, as the kubelet does: a new link renamed over the old.
	if err := os.Symlink("v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if r, _, mq := counts(); r == 1 && mq == 6 {
			break
		}
		if time.Now().After(deadline) {
			r, e, mq := counts()
			t.Fatalf("symlink swap: %d reloads, %d errors, max_queue %d", r, e, mq)
		}
	}
}

// TestEditOnceServingIsApplied: the config watch was set up after the
// socket served, so an edit made as soon as the daemon answered could be
// missed for good (batchctl's held-widening test timed out under load).
// The watch now exists before the listener serves: an edit made when the
// listener is handed to the server (the hook runs then) is applied.
func TestEditOnceServingIsApplied(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "batchd.toml")
	if err := os.WriteFile(cfgPath, []byte("[engine]\nmax_queue = 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{getenv: func(string) string { return "" }, ready: make(chan struct{}),
		wrapListener: func(ln net.Listener) net.Listener {
			if err := os.WriteFile(cfgPath, []byte("[engine]\nmax_queue = 9\n"), 0o644); err != nil {
				t.Error(err)
			}
			return ln
		}}
	d.flags = ServeFlags{Model: synth.TinyFile(t, 256), Socket: filepath.Join(dir, "b.sock"), LogLevel: "error", Config: cfgPath}
	cfg, err := d.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := &syncBuffer{}
	go func() { done <- d.Run(ctx, cfg, log) }()
	defer func() { cancel(); <-done }()
	select { // run sets d.cfg unlocked before it serves
	case <-d.ready:
	case err := <-done:
		done <- err // for the deferred wait
		t.Fatalf("daemon exited: %v\n%s", err, log.String())
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d.mu.Lock()
		mq := d.cfg.Engine.MaxQueue
		d.mu.Unlock()
		if mq == 9 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("max_queue %d: the edit made as the socket began serving was never applied\n%s", mq, log.String())
		}
	}
}
