package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// llamaServer is a llama-server process: plain, or speculating with a
// draft model (--model-draft), for llama.cpp's figures beside batchd's.
type llamaServer struct {
	cmd  *exec.Cmd
	addr string
}

// pMin is --draft-p-min: llama.cpp drafts only while the draft model's
// own probability of its token stays above it (its default 0.8; 0 always
// drafts).
func startLlama(bin, model, draft string, draftTokens, threads int, pMin float64) (*llamaServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := []string{"-m", model, "-t", strconv.Itoa(threads), "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"-np", "1", "-c", "2048", "--no-warmup"}
	if draft != "" {
		args = append(args, "-md", draft, "--draft-max", strconv.Itoa(draftTokens), "--draft-min", "0",
			"--draft-p-min", strconv.FormatFloat(pMin, 'f', -1, 64))
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if os.Getenv("SPECBENCH_LLAMA_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &llamaServer{cmd: cmd, addr: fmt.Sprintf("http://127.0.0.1:%d", port)}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if r, err := http.Get(s.addr + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("llama-server on %s did not come up", s.addr)
}

func (s *llamaServer) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// llamaTimings is what /completion reports of a generation (this
// llama.cpp build reports no draft counts).
type llamaTimings struct {
	PredictedN  int     `json:"predicted_n"`
	PredictedMS float64 `json:"predicted_ms"`
}

// decodeLlama runs w's prompts one at a time and returns the decode speed
// over all of them (llama.cpp's own predicted_n over predicted_ms).
func (s *llamaServer) decode(ctx context.Context, w workload, maxTokens int) (float64, error) {
	var n int
	var ms float64
	for _, p := range w.prompts {
		body := map[string]any{"prompt": p, "n_predict": maxTokens, "ignore_eos": true, "cache_prompt": false,
			"temperature": w.sampling.Temperature, "seed": w.sampling.Seed}
		if w.sampling.Temperature == 0 {
			body["top_k"] = 1
		}
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.addr+"/completion", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		var out struct {
			Timings llamaTimings `json:"timings"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		n += out.Timings.PredictedN
		ms += out.Timings.PredictedMS
	}
	return float64(n) / (ms / 1000), nil
}
