package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/batchd/batchd/kvcache"
	"github.com/batchd/batchd/kvevents"
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
	ins    []*Instance
	mu     sync.Mutex
	reps   []*replica
	rng    *rand.Rand
	stop   context.CancelFunc
	wg     sync.WaitGroup
	Render bool // ask replica 0's render endpoint for the prompt's ids (as the picker's tokenizer does)
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
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if w, kv, err := scrapeOnce(ctx, s.ins[i].HTTP); err == nil {
			s.mu.Lock()
			s.reps[i].waiting, s.reps[i].kvUsage = w, kv
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func scrapeOnce(ctx context.Context, hc *http.Client) (waiting, kv float64, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://batchd/metrics", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		var v float64
		switch {
		case strings.HasPrefix(l, "vllm:num_requests_waiting{"):
			_, err = fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v)
			waiting = v
		case strings.HasPrefix(l, "vllm:kv_cache_usage_perc{"):
			_, err = fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v)
			kv = v
		}
	}
	return waiting, kv, err
}

// subscribe keeps replica i's blocks from its events, keyed by our own
// chain of token ids (as llm-d's indexer keys them, from the tokens).
func (s *Scorer) subscribe(sub zmq4.Socket, i int) {
	defer s.wg.Done()
	defer sub.Close()
	for {
		m, err := sub.Recv()
		if err != nil {
			return
		}
		if len(m.Frames) != 3 {
			continue
		}
		_, evs, err := kvevents.Decode(m.Frames[2])
		if err != nil {
			continue
		}
		s.mu.Lock()
		for _, ev := range evs {
			s.reps[i].apply(ev)
		}
		s.mu.Unlock()
	}
}

func (r *replica) apply(ev kvevents.Received) {
	switch ev.Kind {
	case kvcache.Stored:
		if ev.BlockSize <= 0 {
			return
		}
		var parent kvcache.Hash
		if ev.Parent != nil {
			p, ok := r.engine[*ev.Parent]
			if !ok {
				return // a chain we never saw the start of
			}
			parent = p
		}
		for j, h := range ev.Hashes {
			key := kvcache.ChainHash(parent, ev.Tokens[j*ev.BlockSize:(j+1)*ev.BlockSize])
			r.engine[h] = key
			r.keys[key]++
			parent = key
		}
	case kvcache.Removed:
		for _, h := range ev.Hashes {
			if key, ok := r.engine[h]; ok {
				delete(r.engine, h)
				if r.keys[key]--; r.keys[key] <= 0 {
					delete(r.keys, key)
				}
			}
		}
	case kvcache.Cleared:
		clear(r.keys)
		clear(r.engine)
	}
}

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
