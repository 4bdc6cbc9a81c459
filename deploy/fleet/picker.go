package fleet

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	llmdkv "github.com/llm-d/llm-d-kv-cache/pkg/kvevents"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents/engineadapter"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/backend"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/backend/metrics"

	"github.com/batchd/batchd/kvcache"
)

// Picker chooses the replica for a prompt.
type Picker interface {
	Pick(ctx context.Context, prompt []int) int
	Close()
}

// RoundRobin is the baseline: replicas in turn.
type RoundRobin struct {
	N    int
	next atomic.Uint64
}

// Pick returns the next replica.
func (r *RoundRobin) Pick(context.Context, []int) int { return int(r.next.Add(1)-1) % r.N }

// Close does nothing.
func (r *RoundRobin) Close() {}

// Weights of llm-d's default scheduling profile (its guides' values).
const (
	queueWeight  = 2
	kvWeight     = 2
	prefixWeight = 3
	blockSize    = 16 // the instances' engine.block_size
)

// replica is what the scorer knows of one replica.
type replica struct {
	waiting, kvUsage float64
	keys             map[kvcache.Hash]int // prefix blocks it holds (our own chain keys)
	engine           map[uint64]kvcache.Hash
}

// Scorer picks as llm-d's endpoint picker does with its default profile.
type Scorer struct {
	ins  []*Instance
	mu   sync.Mutex
	reps []*replica
	rng  *rand.Rand
	stop context.CancelFunc
	wg   sync.WaitGroup
	// undecoded counts KV-event messages llm-d's adapter refused.
	undecoded atomic.Int64
	Render    bool // ask replica 0's render endpoint for the prompt's ids (as the picker's tokenizer does)
}

// NewScorer starts scraping each replica's /metrics every 50 ms and
// subscribing to its KV events.
func NewScorer(ins []*Instance, seed uint64) (*Scorer, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scorer{ins: ins, rng: rand.New(rand.NewPCG(seed, 1)), stop: cancel, Render: true}
	for range ins { // every replica first: the goroutines below read s.reps
		s.reps = append(s.reps, &replica{keys: map[kvcache.Hash]int{}, engine: map[uint64]kvcache.Hash{}})
	}
	for i, in := range ins {
		sub := zmq4.NewSub(ctx)
		if err := sub.Dial(in.KVAddr); err != nil {
			cancel()
			return nil, err
		}
		if err := sub.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
			cancel()
			return nil, err
		}
		s.wg.Add(2)
		go s.subscribe(sub, i)
		go s.scrape(ctx, i)
	}
	return s, nil
}

// Close stops the scrapes and subscriptions.
func (s *Scorer) Close() {
	s.stop()
	s.wg.Wait()
}

func (s *Scorer) scrape(ctx context.Context, i int) {
	defer s.wg.Done()
	scraper, err := pickerScraper(s.ins[i].HTTP)
	if err != nil {
		return
	}
	pod := &backend.Pod{Address: "batchd", MetricsHost: "batchd"}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if st, err := scraper.FetchMetrics(ctx, pod, metrics.NewMetricsState()); err == nil {
			s.mu.Lock()
			s.reps[i].waiting, s.reps[i].kvUsage = float64(st.WaitingQueueSize), st.KVCacheUsagePercent
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pickerScraper is the endpoint picker's own /metrics scraper (the Gateway
// API Inference Extension's, with the vLLM names its EPP defaults to),
// reading through hc, so that the simulation fails where the picker would.
func pickerScraper(hc *http.Client) (*metrics.PodMetricsClientImpl, error) {
	mapping, err := metrics.NewMetricMapping("vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "", "vllm:cache_config_info")
	if err != nil {
		return nil, err
	}
	return &metrics.PodMetricsClientImpl{MetricMapping: mapping, ModelServerMetricsPath: "/metrics",
		ModelServerMetricsScheme: "http", Client: hc}, nil
}

// subscribe keeps replica i's blocks from its events, decoded by llm-d's
// own vLLM adapter (what llm-d refuses, the simulation loses too), keyed
// by our own chain of token ids (as llm-d's indexer keys them, from the
// tokens).
func (s *Scorer) subscribe(sub zmq4.Socket, i int) {
	defer s.wg.Done()
	defer sub.Close()
	adapter := engineadapter.NewVLLMAdapter()
	for {
		m, err := sub.Recv()
		if err != nil {
			return
		}
		if len(m.Frames) != 3 || len(m.Frames[1]) != 8 {
			continue
		}
		_, _, batch, err := adapter.ParseMessage(&llmdkv.RawMessage{Topic: string(m.Frames[0]),
			Sequence: binary.BigEndian.Uint64(m.Frames[1]), Payload: m.Frames[2]})
		if err != nil {
			s.undecoded.Add(1)
			continue
		}
		s.mu.Lock()
		for _, ev := range batch.Events {
			s.reps[i].apply(ev)
		}
		s.mu.Unlock()
	}
}

func (r *replica) apply(ev llmdkv.GenericEvent) {
	switch ev := ev.(type) {
	case *llmdkv.BlockStoredEvent:
		if ev.BlockSize <= 0 || len(ev.Tokens) < len(ev.BlockHashes)*ev.BlockSize {
			return
		}
		var parent kvcache.Hash
		if ev.ParentHash != 0 { // llm-d's "no parent"
			p, ok := r.engine[ev.ParentHash]
			if !ok {
				return // a chain we never saw the start of
			}
			parent = p
		}
		for j, h := range ev.BlockHashes {
			toks := make([]int, ev.BlockSize)
			for k, t := range ev.Tokens[j*ev.BlockSize : (j+1)*ev.BlockSize] {
				toks[k] = int(t)
			}
			key := kvcache.ChainHash(parent, toks)
			r.engine[h] = key
			r.keys[key]++
			parent = key
		}
	case *llmdkv.BlockRemovedEvent:
		for _, h := range ev.BlockHashes {
			if key, ok := r.engine[h]; ok {
				delete(r.engine, h)
				if r.keys[key]--; r.keys[key] <= 0 {
					delete(r.keys, key)
				}
			}
		}
	case *llmdkv.AllBlocksClearedEvent:
		clear(r.keys)
		clear(r.engine)
	}
}

// Undecoded counts event messages llm-d's adapter refused.
func (s *Scorer) Undecoded() int64 { return s.undecoded.Load() }

// Pick scores every replica and returns the best.
func (s *Scorer) Pick(ctx context.Context, prompt []int) int {
	if s.Render {
		if ids, err := render(ctx, s.ins[0].HTTP, prompt); err == nil {
			prompt = ids
		}
	}
	var keys []kvcache.Hash
	var parent kvcache.Hash
	for i := 0; i+blockSize <= len(prompt); i += blockSize {
		parent = kvcache.ChainHash(parent, prompt[i:i+blockSize])
		keys = append(keys, parent)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	minQ, maxQ := s.reps[0].waiting, s.reps[0].waiting
	for _, r := range s.reps {
		minQ, maxQ = min(minQ, r.waiting), max(maxQ, r.waiting)
	}
	best, bestScore, ties := 0, -1.0, 0
	for i, r := range s.reps {
		q := 1.0 // queue-scorer: the shortest queue 1, the longest 0
		if maxQ > minQ {
			q = (maxQ - r.waiting) / (maxQ - minQ)
		}
		p := 0.0 // prefix: the longest run of the prompt's blocks held
		for _, k := range keys {
			if r.keys[k] == 0 {
				break
			}
			p++
		}
		if len(keys) > 0 {
			p /= float64(len(keys))
		}
		score := queueWeight*q + kvWeight*(1-r.kvUsage) + prefixWeight*p
		switch {
		case score > bestScore+1e-9:
			best, bestScore, ties = i, score, 1
		case score > bestScore-1e-9:
			if ties++; s.rng.IntN(ties) == 0 { // max-score-picker: a tie at random
				best = i
			}
		}
	}
	return best
}

func render(ctx context.Context, hc *http.Client, prompt []int) ([]int, error) {
	body, _ := json.Marshal(map[string]any{"prompt": prompt})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://batchd/v1/completions/render", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []struct {
		TokenIDs []int `json:"token_ids"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out) != 1 {
		return nil, fmt.Errorf("render: %d answers (%v)", len(out), err)
	}
	return out[0].TokenIDs, nil
}
