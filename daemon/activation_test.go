package daemon

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchd/batchd/chat"
	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestMain lets the test binary stand in for batchd when a test runs it as a
// child process (under systemd-socket-activate).
func TestMain(m *testing.M) {
	if chat.IsWorker(os.Args) { // the chat templates' worker processes
		os.Exit(chat.RunWorker(os.Stdin, os.Stdout))
	}
	if os.Getenv("BATCHD_TEST_AS_DAEMON") == "1" {
		if n := os.Getenv("BATCHD_TEST_NOFILE"); n != "" { // a low descriptor limit, for the stress test
			v, _ := strconv.ParseUint(n, 10, 64)
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
				os.Stderr.WriteString("setrlimit: " + err.Error() + "\n")
				os.Exit(3)
			}
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM) // as cmd/batchd does
		defer stop()
		if err := Serve(ctx, os.Args[2:], os.Stderr); err != nil { // os.Args[1] is "serve"
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSocketActivation: the first connect starts the daemon on the socket
// systemd-socket-activate holds, it serves a golden prompt, and it exits by
// itself after idle_exit_after.
func TestSocketActivation(t *testing.T) {
	activate, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Skip("systemd-socket-activate not installed")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "batchd.sock")
	cfg := filepath.Join(dir, "batchd.toml")
	if err := os.WriteFile(cfg, []byte("idle_exit_after = \"1s\"\nlog_level = \"info\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	cmd := exec.Command(activate, "-l", sock, "-E", "BATCHD_TEST_AS_DAEMON=1", self, "serve", "--config", cfg,
		"--model", testmodels.Path(t, "stories260K.bin"), "--tokenizer", testmodels.Path(t, "tok512.bin"))
	logs, exited := startChild(t, cmd)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("socket never appeared\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The socket file appears at bind, a moment before listen: until then
	// a connect is refused.
	var c *client.Client
	for {
		if c, err = client.Dial(ctx, sock); err == nil || !errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("dial: %v\n%s", err, logs.String())
	}
	g := testmodels.Goldens(t)[1]
	res, err := c.Generate(ctx, client.Request{Prompt: g.Prompt, MaxTokens: g.MaxTokens()}, nil)
	c.Close()
	if err != nil || !slices.Equal(res.Tokens, g.OutputTokens) {
		t.Fatalf("golden through the activated daemon: %v\n%s", err, logs.String())
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("daemon exited with %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("daemon did not exit after idling\n%s", logs.String())
	}
	if !containsAll(logs.String(), "using the socket systemd passed", "idle: exiting") {
		t.Fatalf("logs:\n%s", logs.String())
	}
}

// startChild starts cmd with its output in logs; exited gets its Wait
// result. A child still running when the test ends is killed.
func startChild(t *testing.T, cmd *exec.Cmd) (*syncBuffer, <-chan error) {
	t.Helper()
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, done := make(chan error, 1), make(chan struct{})
	go func() { exited <- cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return logs, exited
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestSocketActivationBothSockets: systemd passes the msgpack socket and
// the HTTP one (FileDescriptorName=http, as batchd-http.socket names it);
// an HTTP request starts the daemon, both serve, and it still idles out.
func TestSocketActivationBothSockets(t *testing.T) {
	activate, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Skip("systemd-socket-activate not installed")
	}
	dir := t.TempDir()
	sock, httpSock := filepath.Join(dir, "batchd.sock"), filepath.Join(dir, "http.sock")
	cfg := filepath.Join(dir, "batchd.toml")
	if err := os.WriteFile(cfg, []byte("idle_exit_after = \"1s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	cmd := exec.Command(activate, "-l", sock, "-l", httpSock, "--fdname=msgpack:http", "-E", "BATCHD_TEST_AS_DAEMON=1",
		self, "serve", "--config", cfg, "--model", testmodels.Path(t, "stories260K.bin"), "--tokenizer", testmodels.Path(t, "tok512.bin"))
	logs, exited := startChild(t, cmd)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(httpSock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sockets never appeared\n%s", logs.String())
		}
	}
	hc := unixHTTPClient(httpSock)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := hc.Post("http://batchd/v1/completions", "application/json", strings.NewReader(`{"prompt": "Once", "max_tokens": 3}`))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("HTTP never served: %v\n%s", err, logs.String())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Generate(ctx, client.Request{Prompt: "Lily", MaxTokens: 3}, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	hc.CloseIdleConnections()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("daemon exited with %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("daemon did not exit after idling\n%s", logs.String())
	}
	if !containsAll(logs.String(), "serving the HTTP API") {
		t.Fatalf("logs:\n%s", logs.String())
	}
}
