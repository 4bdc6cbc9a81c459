// Command embedbench puts the same embedding load on batchd and on
// llama.cpp v0.5.0 (testing/llamacpp; its npm package has no server, so
// in process, batched as its server's slots would be) on the same file,
// in turn, and prints inputs per second for each:
//
//	go run ./testing/cmd/embedbench --model build/l110-q8_0.gguf --llama --rounds 3
//
// Every request is POST /v1/embeddings with one text of about --tokens
// tokens (distinct texts: no prefix cache helps either side), from
// --clients concurrent clients, --requests in all per round. Rounds
// interleave the two servers (batchd, llama.cpp, batchd, ...). Both pool
// as the file says (mean if it declares none) and use F32 K and V. With a
// decoder, or a --chat model beside an encoder, generation beside the
// embedding load is measured after.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/batchd/batchd/daemon"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/llamacpp"
)

func main() {
	model := flag.String("model", "build/l110-q8_0.gguf", "model file, served by both")
	llama := flag.Bool("llama", false, "measure llama.cpp v0.5.0 (testing/llamacpp) beside batchd")
	rounds := flag.Int("rounds", 3, "rounds per server")
	clients := flag.Int("clients", 64, "concurrent requests")
	requests := flag.Int("requests", 256, "requests per round")
	tokens := flag.Int("tokens", 128, "about this many tokens per text")
	flag.StringVar(&chatModel, "chat", "", "a chat model batchd serves beside --model (the embedding model, then a second "+
		"model of the same daemon); the generation runs on it")
	flag.Parse()
	if err := run(*model, *llama, *rounds, *clients, *requests, *tokens); err != nil {
		fmt.Fprintln(os.Stderr, "embedbench:", err)
		os.Exit(1)
	}
}

// chatModel, when set, is batchd's default model and the embedding model
// is a second one, "embed".
var chatModel string

type server struct {
	name, url string
	hc        *http.Client
	embed     string // batchd: the embedding model's name ("" the default)
	ref       *llamacpp.Ref
	seqs      int // llama.cpp: sequences per decode
}

func run(model string, llama bool, rounds, clients, requests, tokens int) error {
	dir, err := os.MkdirTemp("", "embedbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pooling, generates, err := describe(model)
	if err != nil {
		return err
	}
	b, stop, err := startBatchd(model, dir)
	if err != nil {
		return err
	}
	defer stop()
	servers := []server{b}
	if llama {
		l, stopL, err := startLlama(model, pooling, clients)
		if err != nil {
			return err
		}
		defer stopL()
		servers = append(servers, l)
	}
	fmt.Printf("%s: %d requests of one ~%d-token text per round, %d at once; inputs/s\n\n", model, requests, tokens, clients)
	fmt.Print("| round |")
	for _, s := range servers {
		fmt.Printf(" %s |", s.name)
	}
	if len(servers) == 2 {
		fmt.Print(" ratio |")
	}
	fmt.Println()
	fmt.Println("|---|---|---|---|")
	defer func() {
		if !generates && chatModel == "" { // an encoder: a chat runs on another model
			return
		}
		if err := mixed(b, rounds, clients, requests, tokens); err != nil {
			fmt.Fprintln(os.Stderr, "embedbench: mixed:", err)
		}
	}()
	for r := 1; r <= rounds; r++ {
		fmt.Printf("| %d |", r)
		var rates []float64
		for _, s := range servers {
			load := load
			if s.ref != nil {
				load = func(s server, round, _, requests, tokens int) (float64, error) {
					return refLoad(s, round, requests, tokens)
				}
			}
			rate, err := load(s, r, clients, requests, tokens)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			rates = append(rates, rate)
			fmt.Printf(" %.1f |", rate)
		}
		if len(rates) == 2 {
			fmt.Printf(" %.2fx |", rates[0]/rates[1])
		}
		fmt.Println()
	}
	return nil
}

// describe says how batchd pools the file (llama-server is told the
// same: it reads the key only for encoders) and whether it generates.
func describe(path string) (string, bool, error) {
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		return "", false, err
	}
	defer m.Close()
	pooling := map[int]string{2: "cls", 3: "last"}[m.Config.Pooling]
	if pooling == "" {
		pooling = "mean"
	}
	return pooling, m.Generates(), nil
}

func startBatchd(model, dir string) (server, func(), error) {
	sock, hsock, cfg := filepath.Join(dir, "b.sock"), filepath.Join(dir, "h.sock"), filepath.Join(dir, "batchd.toml")
	conf, serve, embed := "[engine]\nkv_cache_type = \"f32\"\n", model, ""
	if chatModel != "" {
		conf += fmt.Sprintf("[models.embed]\npath = %q\n", model)
		serve, embed = chatModel, "embed"
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return server{}, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Serve(ctx, []string{"--model", serve, "--config", cfg, "--socket", sock, "--http-socket", hsock,
			"--log-level", "error"}, os.Stderr)
	}()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", hsock)
	}}}
	s := server{name: "batchd", url: "http://batchd", hc: hc, embed: embed}
	stop := func() { cancel(); <-done }
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := hc.Get(s.url + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return s, stop, nil
			}
		}
	}
	stop()
	return server{}, nil, fmt.Errorf("batchd did not become ready")
}

// startLlama runs llama.cpp v0.5.0 (testing/llamacpp) on the file in
// process: the npm package ships no llama-server, so its side embeds the
// same texts as llama-server's slots would (as many sequences per decode
// as there are clients, at most 2048 tokens, -b/-ub 2048), timed inside
// the decode calls; batchd's side still goes through HTTP.
func startLlama(model, pooling string, clients int) (server, func(), error) {
	dir, err := llamacpp.CacheDir()
	if err != nil {
		return server{}, nil, err
	}
	in, err := llamacpp.Ensure(context.Background(), dir)
	if err != nil {
		return server{}, nil, err
	}
	ref, err := llamacpp.Start(in, llamacpp.Options{})
	if err != nil {
		return server{}, nil, err
	}
	if _, err := ref.LoadModel(model, false); err != nil {
		return server{}, nil, err
	}
	pool := map[string]int{"mean": llamacpp.PoolingMean, "cls": llamacpp.PoolingCLS, "last": llamacpp.PoolingLast}[pooling]
	if err := ref.Context(llamacpp.ContextOptions{Ctx: 2048 * 4, Batch: 2048, Seqs: min(clients, 64), Embeddings: true,
		Pooling: pool}); err != nil {
		return server{}, nil, err
	}
	fmt.Printf("llama.cpp %s (%s), CPU build: %s\n", llamacpp.Release, llamacpp.Package, strings.TrimSpace(ref.System))
	return server{name: "llama.cpp", ref: ref, seqs: min(clients, 64)}, func() { _ = ref.Close() }, nil
}

// refLoad embeds a round's texts in llama.cpp, batched as its server's
// slots would batch them, and returns inputs per second of decode.
func refLoad(s server, round, requests, tokens int) (float64, error) {
	var secs float64
	var group [][]int
	used := 0
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		t, err := s.ref.EmbedMany(group)
		secs += t
		group, used = group[:0], 0
		return err
	}
	for i := range requests {
		toks, err := s.ref.Tokenize(text(round, i, tokens), true, true)
		if err != nil {
			return 0, err
		}
		if len(group) == s.seqs || used+len(toks) > 2048 {
			if err := flush(); err != nil {
				return 0, err
			}
		}
		group, used = append(group, toks), used+len(toks)
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return float64(requests) / secs, nil
}

// text is a distinct text of about n tokens (a word is about one token).
func text(round, i, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Document %d of round %d:", i, round)
	for w := 0; w < n-8; w++ {
		fmt.Fprintf(&b, " %s", []string{"river", "stone", "quiet", "market", "lantern", "orbit", "garden", "signal"}[(i+w*7+round)%8])
	}
	return b.String()
}

func load(s server, round, clients, requests, tokens int) (float64, error) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				body, _ := json.Marshal(map[string]any{"input": text(round, i, tokens), "model": "m"})
				if s.name == "batchd" {
					body, _ = json.Marshal(map[string]any{"input": text(round, i, tokens), "model": s.embed})
				}
				resp, err := s.hc.Post(s.url+"/v1/embeddings", "application/json", bytes.NewReader(body))
				if err == nil {
					var out struct {
						Data []struct {
							Embedding []float32 `json:"embedding"`
						} `json:"data"`
					}
					err = json.NewDecoder(resp.Body).Decode(&out)
					resp.Body.Close()
					if err == nil && (resp.StatusCode != 200 || len(out.Data) != 1 || len(out.Data[0].Embedding) == 0) {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		}()
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return float64(requests) / time.Since(start).Seconds(), firstErr
}

// generate runs n streams of 64 greedy tokens on batchd's completions
// endpoint and returns tokens/s.
func generate(s server, n int) (float64, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	total := 0
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"prompt": fmt.Sprintf("Story %d:", i), "max_tokens": 64,
				"temperature": 0, "ignore_eos": true})
			resp, err := s.hc.Post(s.url+"/v1/completions", "application/json", bytes.NewReader(body))
			var out struct {
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err == nil {
				err = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = err
			}
			total += out.Usage.CompletionTokens
		}()
	}
	wg.Wait()
	return float64(total) / time.Since(start).Seconds(), firstErr
}

// mixed runs 8 generation streams beside the embedding load on batchd,
// and each alone: neither starves the other.
func mixed(b server, rounds, clients, requests, tokens int) error {
	fmt.Printf("\nbatchd, generation (8 streams x 64 tokens, tok/s) and embeddings (inputs/s), alone and together\n\n")
	fmt.Println("| round | generation alone | embeddings alone | generation beside | embeddings beside |")
	fmt.Println("|---|---|---|---|---|")
	for r := 1; r <= rounds; r++ {
		genAlone, err := generate(b, 8)
		if err != nil {
			return err
		}
		embAlone, err := load(b, 100+r, clients, requests, tokens)
		if err != nil {
			return err
		}
		var genBeside float64
		var genErr error
		done := make(chan struct{})
		go func() { genBeside, genErr = generate(b, 8); close(done) }()
		embBeside, err := load(b, 200+r, clients, requests, tokens)
		<-done
		if err != nil || genErr != nil {
			return errors.Join(err, genErr)
		}
		fmt.Printf("| %d | %.0f | %.1f | %.0f | %.1f |\n", r, genAlone, embAlone, genBeside, embBeside)
	}
	return nil
}
