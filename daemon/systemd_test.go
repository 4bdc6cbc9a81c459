package daemon

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestNotifySequence runs the daemon with a fake NOTIFY_SOCKET and checks the
// states it sends: READY=1 once serving, RELOADING=1 (with MONOTONIC_USEC)
// then READY=1 around a reload, STOPPING=1 on shutdown, STATUS= throughout.
func TestNotifySequence(t *testing.T) {
	dir := t.TempDir()
	addr := filepath.Join(dir, "notify.sock")
	pc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	t.Setenv("NOTIFY_SOCKET", addr)
	var mu sync.Mutex
	var got []string
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := pc.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, string(buf[:n]))
			mu.Unlock()
		}
	}()
	td := startDaemon(t, "[engine]\nmax_num_seqs = 4\n")
	td.d.reload("test", nil, true)
	td.stop()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		joined := strings.Join(got, "\n---\n")
		mu.Unlock()
		if strings.Contains(joined, "STOPPING=1") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var kinds []string
	for _, m := range got {
		first := strings.SplitN(m, "=", 2)[0]
		kinds = append(kinds, first)
		if first == "RELOADING" && !strings.Contains(m, "MONOTONIC_USEC=") {
			t.Errorf("RELOADING without MONOTONIC_USEC: %q", m)
		}
		if first == "READY" && !strings.Contains(m, "STATUS=ready: stories260K.bin") {
			t.Errorf("READY without a status line: %q", m)
		}
	}
	want := []string{"READY", "RELOADING", "READY", "STOPPING"}
	var filtered []string
	for _, k := range kinds {
		if k != "STATUS" && k != "WATCHDOG" {
			filtered = append(filtered, k)
		}
	}
	if strings.Join(filtered, ",") != strings.Join(want, ",") {
		t.Fatalf("notify sequence %v, want %v (all: %q)", filtered, want, got)
	}
}

type fakeNotifier struct {
	mu       sync.Mutex
	states   []string
	interval time.Duration
}

func (f *fakeNotifier) Notify(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states = append(f.states, s)
	return nil
}

func (f *fakeNotifier) WatchdogInterval() time.Duration { return f.interval }

func (f *fakeNotifier) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.states {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// TestWatchdogFollowsEngineHeartbeat: pings flow while the engine loop's
// heartbeat is fresh and stop once it is wedged (virtual time, no sleeps).
func TestWatchdogFollowsEngineHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn := &fakeNotifier{interval: 10 * time.Second}
		d := &Daemon{notifier: fn, log: slog.New(slog.DiscardHandler)}
		var hmu sync.Mutex
		beat := time.Now()
		wedged := false
		heartbeat := func() time.Time {
			hmu.Lock()
			defer hmu.Unlock()
			if !wedged {
				beat = time.Now()
			}
			return beat
		}
		ctx, cancel := context.WithCancel(context.Background())
		go d.superviseSystemd(ctx, heartbeat)
		time.Sleep(60 * time.Second)
		synctest.Wait()
		alive := fn.count("WATCHDOG=1")
		if alive < 10 {
			t.Fatalf("%d pings in 60 s with a live loop (interval 10 s)", alive)
		}
		hmu.Lock()
		wedged = true
		hmu.Unlock()
		time.Sleep(60 * time.Second)
		synctest.Wait()
		// At most one ping while the last beat is still within the interval.
		if n := fn.count("WATCHDOG=1") - alive; n > 1 {
			t.Fatalf("%d pings after the loop wedged", n)
		}
		if fn.count("STATUS=") < 20 {
			t.Fatalf("status not kept current: %d updates in 120 s", fn.count("STATUS="))
		}
		cancel()
	})
}

func TestJournalLogging(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stream, err := fstat(f)
	if err != nil {
		t.Fatal(err)
	}
	var lvl slog.LevelVar
	log := slog.New(logHandler(f, &lvl, stream))
	log.Error("boom", "k", 1)
	log.Info("hello")
	log.Debug("hidden")
	b, _ := os.ReadFile(f.Name())
	out := string(b)
	if !strings.HasPrefix(out, "<3>msg=boom k=1\n<6>msg=hello\n") || strings.Contains(out, "time=") {
		t.Fatalf("journal output %q", out)
	}
	// Not the journal: ordinary text with timestamps.
	g, _ := os.CreateTemp(t.TempDir(), "plain")
	defer g.Close()
	slog.New(logHandler(g, &lvl, stream)).Info("x")
	b, _ = os.ReadFile(g.Name())
	if !strings.HasPrefix(string(b), "time=") {
		t.Fatalf("plain output %q", b)
	}
}
