package fleet

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Instance is one batchd process: its HTTP API on a Unix socket, its KV
// events on a loopback port.
type Instance struct {
	Name   string
	HTTP   *http.Client
	KVAddr string // tcp://127.0.0.1:PORT
	cmd    *exec.Cmd
	logs   bytes.Buffer
}

// InstanceOptions configures the processes.
type InstanceOptions struct {
	Bin     string // the batchd binary
	Model   string // the model file
	Dir     string // sockets and configs go here
	Threads int    // CPU threads each (0: batchd's plan)
	Extra   string // extra TOML for each config
}

// Start runs n instances and waits until each is healthy.
func Start(ctx context.Context, n int, o InstanceOptions) ([]*Instance, error) {
	var out []*Instance
	for i := range n {
		in, err := start(ctx, i, o)
		if err != nil {
			Stop(out)
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

func start(ctx context.Context, i int, o InstanceOptions) (*Instance, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.Dir, fmt.Sprintf("r%d", i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kv := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	cfg := fmt.Sprintf("log_level = \"warn\"\n[model]\npath = %q\n[server]\nsocket = %q\nhttp_socket = %q\n[engine]\nblock_size = 16\nthreads = %d\n[kv_events]\nendpoint = %q\nallow_from = [\"127.0.0.1\"]\npod = \"r%d\"\n%s",
		o.Model, filepath.Join(dir, "b.sock"), filepath.Join(dir, "h.sock"), o.Threads, kv, i, o.Extra)
	if err := os.WriteFile(filepath.Join(dir, "batchd.toml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	in := &Instance{Name: fmt.Sprintf("r%d", i), KVAddr: kv}
	in.cmd = exec.Command(o.Bin, "serve", "--config", filepath.Join(dir, "batchd.toml"))
	in.cmd.Stdout, in.cmd.Stderr = &in.logs, &in.logs
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := in.cmd.Start(); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "h.sock")
	in.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := in.HTTP.Get("http://batchd/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return in, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			in.stop()
			return nil, fmt.Errorf("instance %d never became healthy: %v\n%s", i, err, in.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (in *Instance) stop() {
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = in.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = in.cmd.Process.Kill()
		<-done
	}
}

// Stop ends every instance.
func Stop(ins []*Instance) {
	for _, in := range ins {
		in.stop()
	}
}
