package daemon

import (
	"os"
	"slices"
	"testing"
	"time"
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
		pol, _ := resolvePolicy(td.d.cfg.Server)
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
		td.d.reload("test", nil)
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
