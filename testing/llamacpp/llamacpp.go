// Package llamacpp runs llama.cpp's llama-server (../shared/tools/llama.cpp)
// on a model file during a test, so that a file the test writes (a tiny
// model with a feature the shared references do not reach) can be checked
// against llama.cpp's own greedy tokens and log-probabilities. Tests skip
// where the binaries are absent.
package llamacpp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/batchd/batchd/engine/model/gguf"
	"github.com/batchd/batchd/testing/testmodels"
)

// Server is a running llama-server.
type Server struct {
	url string
}

// Bin returns the llama.cpp bin directory, or skips the test.
func Bin(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("LLAMA_BIN")
	if dir == "" {
		dir = filepath.Join(testmodels.Dir(tb), "..", "tools", "llama.cpp", "bin")
	}
	if _, err := os.Stat(filepath.Join(dir, "llama-server")); err != nil {
		tb.Skipf("llama-server not found in %s (set LLAMA_BIN): %v", dir, err)
	}
	return dir
}

// Start runs llama-server on model with an F32 KV cache (as the shared
// references were made) and stops it when the test ends; extra are more
// flags (--embeddings).
func Start(tb testing.TB, model string, extra ...string) *Server {
	tb.Helper()
	bin := Bin(tb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var log bytes.Buffer
	args := append([]string{"-m", model, "-t", "2", "-c", "2048", "-np", "1",
		"--seed", "0", "--cache-type-k", "f32", "--cache-type-v", "f32", "--host", "127.0.0.1", "--port", fmt.Sprint(port)}, extra...)
	cmd := exec.Command(filepath.Join(bin, "llama-server"), args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s := &Server{url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if r, err := http.Get(s.url + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("llama-server did not start:\n%s", log.String())
		}
	}
}

// Complete returns llama.cpp's n greedy tokens after prompt and, per
// step, its top-5 [id, log-probability] pairs.
func (s *Server) Complete(tb testing.TB, prompt []int, n int) ([]int, [][][2]float64) {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "n_predict": n, "temperature": 0, "top_k": 1,
		"samplers": []string{"top_k"}, "return_tokens": true, "cache_prompt": false, "n_probs": 5, "ignore_eos": true})
	r, err := http.Post(s.url+"/completion", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Body.Close()
	var out struct {
		Tokens []int `json:"tokens"`
		Probs  []struct {
			Top []struct {
				ID      int     `json:"id"`
				LogProb float64 `json:"logprob"`
			} `json:"top_logprobs"`
		} `json:"completion_probabilities"`
	}
	if err := json.NewDecoder(r.Body).Decode(&out); err != nil {
		tb.Fatal(err)
	}
	top := make([][][2]float64, len(out.Probs))
	for i, p := range out.Probs {
		for _, e := range p.Top {
			top[i] = append(top[i], [2]float64{float64(e.ID), e.LogProb})
		}
	}
	return out.Tokens, top
}

// Embed returns llama-server's /v1/embeddings vectors for texts (a
// server started with --embeddings) and the token ids it ran for each
// (/tokenize with special tokens added, as its embedding routes do).
func (s *Server) Embed(tb testing.TB, texts []string) ([][]float32, [][]int) {
	tb.Helper()
	post := func(path string, req, resp any) {
		body, _ := json.Marshal(req)
		r, err := http.Post(s.url+path, "application/json", bytes.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		defer r.Body.Close()
		if r.StatusCode != http.StatusOK {
			tb.Fatalf("llama-server %s: %s", path, r.Status)
		}
		if err := json.NewDecoder(r.Body).Decode(resp); err != nil {
			tb.Fatal(err)
		}
	}
	var out struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	post("/v1/embeddings", map[string]any{"input": texts}, &out)
	vecs, toks := make([][]float32, len(texts)), make([][]int, len(texts))
	for i, tx := range texts {
		vecs[i] = out.Data[i].Embedding
		var tk struct {
			Tokens []int `json:"tokens"`
		}
		post("/tokenize", map[string]any{"content": tx, "add_special": true}, &tk)
		toks[i] = tk.Tokens
	}
	return vecs, toks
}

// Rewrite copies the GGUF file src to dst with the metadata keys in set
// changed or added; tensors are copied as they are.
func Rewrite(tb testing.TB, src, dst string, set map[string]any) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		tb.Fatal(err)
	}
	w := gguf.NewWriterFrom(f, b)
	for k, v := range set {
		w.Set(k, v)
	}
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	defer out.Close()
	if _, err := w.WriteTo(out); err != nil {
		tb.Fatal(err)
	}
}

// Tokenize returns llama-tokenize's ids for text on a vocabulary file,
// without BOS, special tokens parsed or not (as --no-parse-special says).
// ok is false when llama.cpp refused to load the file (a pre-tokenizer
// name this build does not know); its output is then in msg.
func Tokenize(tb testing.TB, vocab, text string, parseSpecial bool) (ids []int, ok bool, msg string) {
	tb.Helper()
	f := filepath.Join(tb.TempDir(), "text")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	args := []string{"-m", vocab, "-f", f, "--ids", "--no-bos", "--no-escape", "--log-disable"}
	if !parseSpecial {
		args = append(args, "--no-parse-special")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(Bin(tb), "llama-tokenize"), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, false, stderr.String()
	}
	// The ids are the last line: [1, 2, 3].
	out := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if err := json.Unmarshal(out, &ids); err != nil {
		tb.Fatalf("llama-tokenize printed %q: %v", out, err)
	}
	return ids, true, ""
}
