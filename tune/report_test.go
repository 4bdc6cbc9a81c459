package tune

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// synthResults: throughput saturates at size 16; bigger batches and
// longer windows cost latency; the window 50ms is the best.
func synthResults() []Result {
	var out []Result
	for _, load := range []int{8, 32} {
		for _, w := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond} {
			for _, s := range []int{4, 8, 16, 32} {
				tps := 10 * float64(min(s, 16)) * float64(load) / 32
				if w == 50*time.Millisecond {
					tps *= 1.1
				}
				ttft := 0.05*float64(s) + w.Seconds()
				out = append(out, Result{Sample: Sample{Cell: Cell{s, w, load}, TokensPerSec: tps,
					TTFT: Percentiles{P95: ttft}, ITL: Percentiles{P95: 0.01 * float64(s)}, Utilization: float64(s) / 32}})
			}
		}
	}
	return out
}

// TestRecommend: the knee is where the synthetic throughput saturates; a
// strict channel gets the most throughput its objective allows, a loose
// one the most throughput, one no setting satisfies the lowest latency;
// the TOML fragment and the SVGs come out well-formed.
func TestRecommend(t *testing.T) {
	objs := []Objective{{Channel: "realtime", TTFT: 500 * time.Millisecond, ITL: 100 * time.Millisecond},
		{Channel: "standard", TTFT: 2 * time.Second}, {Channel: "impossible", TTFT: time.Millisecond}}
	r := Recommend(synthResults(), objs)
	if r.KneeAt != (Setting{16, 50 * time.Millisecond}) {
		t.Errorf("knee at %+v (%+v), want size 16, window 50ms", r.KneeAt, r.Knee)
	}
	want := []Setting{{8, 50 * time.Millisecond}, {16, 50 * time.Millisecond}, {4, 10 * time.Millisecond}}
	for i, p := range r.Picks {
		if p.Setting != want[i] || p.Met != (i < 2) {
			t.Errorf("%s: %+v, want %+v (met %v)", p.Channel, p.Setting, want[i], i < 2)
		}
	}
	if r.Engine.Channel != "realtime" {
		t.Errorf("engine setting from %s, want realtime's", r.Engine.Channel)
	}
	var toml strings.Builder
	r.WriteTOML(&toml, "test")
	if s := toml.String(); !strings.Contains(s, "max_num_seqs = 8") || !strings.Contains(s, `batch_window = "50ms"`) ||
		!strings.Contains(s, `mode = "dynamic"`) {
		t.Errorf("toml:\n%s", s)
	}
	var table strings.Builder
	r.WriteTable(&table)
	if !strings.Contains(table.String(), "reported: size 16") {
		t.Errorf("table:\n%s", table.String())
	}
	for name, write := range map[string]func(w io.Writer) error{"curve": r.WriteCurveSVG, "heatmap": r.WriteHeatmapSVG} {
		var b strings.Builder
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(strings.NewReader(b.String()))
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s svg: %v", name, err)
			}
		}
	}
}

// fakeTarget returns preset windows and records what was applied.
type fakeTarget struct {
	windows []Window
	applied []Setting
	restore int
}

func (f *fakeTarget) Apply(s Setting) error { f.applied = append(f.applied, s); return nil }
func (f *fakeTarget) Restore() error        { f.restore++; return nil }
func (f *fakeTarget) Watch(context.Context, time.Duration) (Window, error) {
	if len(f.windows) == 0 {
		return Window{}, errors.New("no window")
	}
	w := f.windows[0]
	f.windows = f.windows[1:]
	return w, nil
}

// TestRolloutKeepsOrRollsBack: a worse candidate is rolled back (once),
// a good one kept; a failed watch restores the baseline.
func TestRolloutKeepsOrRollsBack(t *testing.T) {
	base := Window{TokensPerSec: 100, P95TTFT: 100 * time.Millisecond, Requests: 50}
	worse := Window{TokensPerSec: 30, P95TTFT: time.Second, Requests: 50}
	f := &fakeTarget{windows: []Window{base, worse}}
	var logged []string
	keep, why, err := Rollout(context.Background(), f, Setting{Size: 1}, time.Second, DefaultTolerance, func(s string) { logged = append(logged, s) })
	if err != nil || keep || f.restore != 1 || !strings.Contains(why, "throughput") || len(logged) != 3 {
		t.Errorf("worse: keep %v, %q, restores %d, log %q, %v", keep, why, f.restore, logged, err)
	}
	f = &fakeTarget{windows: []Window{base, {TokensPerSec: 130, P95TTFT: 90 * time.Millisecond, Requests: 60}}}
	if keep, _, err := Rollout(context.Background(), f, Setting{Size: 16}, time.Second, DefaultTolerance, func(string) {}); !keep || err != nil || f.restore != 0 {
		t.Errorf("better: keep %v, restores %d, %v", keep, f.restore, err)
	}
	f = &fakeTarget{windows: []Window{base}}
	if _, _, err := Rollout(context.Background(), f, Setting{Size: 16}, time.Second, DefaultTolerance, func(string) {}); err == nil || f.restore != 1 {
		t.Errorf("a failed watch: %v, restores %d", err, f.restore)
	}
}
