package daemon

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/testing/synth"
)

const floodKey = "0123456789abcdef-flood"

// TestConnectionFloodsUnderLowFDLimit: a daemon under a descriptor limit of
// 256 serves the msgpack socket, the HTTP API on a Unix socket and on TCP,
// and metrics on TCP. Each listener is flooded as the defects were found:
// TCP clients that send one keyless request and hold the connection, TCP
// and Unix connections that never send a byte, msgpack connections that
// never say hello, and keep-alive metrics scrapers. While every flood
// connection is still held, a legitimate request on every listener
// succeeds, and the daemon stays below its descriptor limit.
func TestConnectionFloodsUnderLowFDLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("flood test")
	}
	dir := t.TempDir()
	sock, httpSock, cfg := filepath.Join(dir, "b.sock"), filepath.Join(dir, "h.sock"), filepath.Join(dir, "batchd.toml")
	tcp, metrics := freePort(t), freePort(t)
	conf := fmt.Sprintf("log_level = \"error\"\n[server]\nhello_timeout = \"3s\"\nhttp_listen = %q\nmetrics_listen = %q\n"+
		"[server.api_keys]\n\"0\" = %q\n", tcp, metrics, floodKey)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	cmd := exec.Command(self, "serve", "--config", cfg, "--model", synth.TinyFile(t, 256), "--socket", sock, "--http-socket", httpSock)
	cmd.Env = append(os.Environ(), "BATCHD_TEST_AS_DAEMON=1", "BATCHD_TEST_NOFILE=256")
	logs, exited := startChild(t, cmd)
	waitServing(t, sock, exited, logs)

	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	hold := func(network, addr string, n int, first func(net.Conn)) {
		var wg sync.WaitGroup
		for range n {
			c, err := net.DialTimeout(network, addr, time.Second)
			if err != nil {
				continue // the kernel's backlog is full: the flood's problem
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			if first != nil {
				wg.Add(1)
				go func() { defer wg.Done(); first(c) }()
			}
		}
		wg.Wait()
	}
	keyless := func(c net.Conn) { // one request without a key; read the 401; keep the connection
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprint(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
		}
	}
	scrape := func(c net.Conn) { // a keep-alive scrape, held afterwards
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprint(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
		}
	}
	hold("tcp", tcp, 550, keyless)
	hold("tcp", tcp, 550, nil)
	hold("tcp", metrics, 600, scrape)
	hold("unix", sock, 400, nil)
	hold("unix", httpSock, 400, nil)
	t.Logf("%d flood connections held", len(held))

	// Now, with the floods still open, each listener serves.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The daemon may still be accepting the floods' last connections, each
	// admitted by evicting the oldest unauthenticated one: a connection
	// made now can be evicted before its hello, as any client of a flooded
	// daemon can, and a client dials again. A few tries, then it must work.
	var res *client.Result
	for try := 1; ; try++ {
		c, err := client.Dial(ctx, sock)
		if err == nil {
			res, err = c.Generate(ctx, client.Request{Prompt: "a", MaxTokens: 3}, nil)
			c.Close()
		}
		if err == nil && len(res.Tokens) > 0 {
			break
		}
		if try == 5 {
			t.Fatalf("msgpack socket, %d tries: %v\n%s", try, err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	unixHTTP := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", httpSock)
		}}}
	for name, get := range map[string]func() (*http.Response, error){
		"unix http": func() (*http.Response, error) { return unixHTTP.Get("http://batchd/v1/models") },
		"tcp http with a key": func() (*http.Response, error) {
			req, _ := http.NewRequest("GET", "http://"+tcp+"/v1/models", nil)
			req.Header.Set("Authorization", "Bearer "+floodKey)
			return (&http.Client{Timeout: 10 * time.Second}).Do(req)
		},
		"metrics": func() (*http.Response, error) {
			return (&http.Client{Timeout: 10 * time.Second}).Get("http://" + metrics + "/metrics")
		},
	} {
		resp, err := get()
		for try := 1; err != nil && try < 5; try++ { // evicted while pending, as above: dial again
			time.Sleep(200 * time.Millisecond)
			resp, err = get()
		}
		if err != nil {
			t.Errorf("%s during the floods, 5 tries: %v", name, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s during the floods: %s", name, resp.Status)
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid)); err == nil {
		t.Logf("the daemon holds %d descriptors of 256", len(fds))
		if len(fds) >= 250 {
			t.Errorf("the daemon holds %d descriptors, at its limit of 256", len(fds))
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("the daemon exited under the floods: %v\n%s", err, logs.String())
	default:
	}
	if strings.Contains(logs.String(), "too many open files") {
		t.Errorf("the daemon ran out of descriptors:\n%s", logs.String())
	}
}

// freePort returns a loopback host:port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
