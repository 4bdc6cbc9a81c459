// Package remote tunes a running daemon over its socket: a Target that
// rolls a setting out through the daemon's config file (the hot-reload
// path) and watches it, and a Runner that runs the test matrix's cells
// against it in the bulk channel.
package remote

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/tune"
)

// Target rolls a setting out to a running daemon: it edits the
// [engine] keys of the daemon's config file (the hot-reload path applies
// them), keeps the file's original bytes to restore, and watches the
// daemon's throughput (its generated-token counter) and, through probe
// requests of its own, the time to first token a user sees.
type Target struct {
	c        *client.Client
	path     string
	original []byte
	baseSeqs int
}

// NewTarget is the daemon c talks to, whose config file is path: its
// bytes now are the baseline Restore writes back.
func NewTarget(ctx context.Context, c *client.Client, path string) (*Target, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := c.Stats(ctx)
	if err != nil {
		return nil, err
	}
	return &Target{c: c, path: path, original: b, baseSeqs: s.Config.MaxNumSeqs}, nil
}

func (t *Target) Apply(s tune.Setting) error {
	mode, window := "continuous", "0s"
	if s.Window > 0 {
		mode, window = "dynamic", s.Window.String()
	}
	text := SetEngineKeys(string(t.original), map[string]string{"max_num_seqs": fmt.Sprint(s.Size),
		"mode": fmt.Sprintf("%q", mode), "batch_window": fmt.Sprintf("%q", window)})
	return t.write([]byte(text), s.Size)
}

func (t *Target) Restore() error { return t.write(t.original, t.baseSeqs) }

// write replaces the config file (atomically) and waits until the daemon
// runs with max_num_seqs seqs.
func (t *Target) write(b []byte, seqs int) error {
	if err := ReplaceFile(t.path, b); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if st, err := os.Lstat(t.path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		// The daemon watches the link's directory, not the file it points
		// to (replaced in place to keep the link): ask it to reload.
		if _, err := t.c.Reload(ctx); err != nil {
			return fmt.Errorf("%s is a link, so the daemon must be asked to reload: %w", t.path, err)
		}
	}
	last := ""
	for {
		s, err := t.c.Stats(ctx)
		if err == nil && s.Config.MaxNumSeqs == seqs {
			return nil
		}
		if err == nil {
			last = s.LastReloadError
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the daemon did not reload %s to max_num_seqs %d (last rejected reload: %q)", t.path, seqs, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Watch measures d: the daemon's generated tokens per second, and the
// p95 time to first token of probes sent one after another meanwhile.
func (t *Target) Watch(ctx context.Context, d time.Duration) (tune.Window, error) {
	s0, err := t.c.Stats(ctx)
	if err != nil {
		return tune.Window{}, err
	}
	start := time.Now()
	var ttfts []time.Duration
	for time.Since(start) < d {
		begin := time.Now()
		first := time.Duration(0)
		_, err := t.c.Generate(ctx, client.Request{Prompt: "Once upon a time", MaxTokens: 4}, func(client.Delta) error {
			if first == 0 {
				first = time.Since(begin)
			}
			return nil
		})
		if err != nil {
			return tune.Window{}, err
		}
		ttfts = append(ttfts, first)
	}
	s1, err := t.c.Stats(ctx)
	if err != nil {
		return tune.Window{}, err
	}
	var ended uint64
	for k, v := range s1.Finished {
		ended += v - s0.Finished[k]
	}
	slices.Sort(ttfts)
	w := tune.Window{TokensPerSec: float64(s1.GeneratedTokens-s0.GeneratedTokens) / time.Since(start).Seconds(), Requests: int(ended)}
	if len(ttfts) > 0 {
		w.P95TTFT = ttfts[min(len(ttfts)-1, int(0.95*float64(len(ttfts))))]
	}
	return w, nil
}

var tomlKey = regexp.MustCompile(`^\s*([A-Za-z0-9_]+)\s*=`)

// SetEngineKeys sets keys of the [engine] table in a TOML text, replacing
// their lines or adding them after the header (adding the table if it is
// missing); everything else, comments included, stays as it was.
func SetEngineKeys(text string, kv map[string]string) string {
	lines := strings.Split(text, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "[engine]" })
	if start < 0 {
		lines = append(lines, "[engine]")
		start = len(lines) - 1
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "[") {
			end = i
			break
		}
	}
	done := map[string]bool{}
	for i := start + 1; i < end; i++ {
		if m := tomlKey.FindStringSubmatch(lines[i]); m != nil {
			if v, ok := kv[m[1]]; ok {
				lines[i], done[m[1]] = m[1]+" = "+v, true
			}
		}
	}
	var add []string
	for _, k := range []string{"max_num_seqs", "mode", "batch_window"} {
		if v, ok := kv[k]; ok && !done[k] {
			add = append(add, k+" = "+v)
		}
	}
	lines = slices.Insert(lines, start+1, add...)
	return strings.Join(lines, "\n")
}
