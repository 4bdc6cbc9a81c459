package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	client "github.com/batchd/batchd/clients/go"
)

// TestGrafanaDashboardQueriesExist: every metric a query of the shipped
// Grafana dashboard names is one a running batchd exports (histograms by
// their _bucket, _sum and _count series), so a renamed metric cannot leave
// a panel empty; and it has the panels the dashboard promises.
func TestGrafanaDashboardQueriesExist(t *testing.T) {
	raw, err := os.ReadFile("../packaging/grafana/batchd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query string `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	msock := filepath.Join(t.TempDir(), "metrics.sock")
	td := startDaemon(t, "[server]\nmetrics_listen = \"unix:"+msock+"\"\n[engine]\nadaptive = true\n")
	if _, err := td.dial(t).Generate(context.Background(), client.Request{Prompt: "Once", MaxTokens: 4}, nil); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, msock)
	name := regexp.MustCompile(`batchd:[a-zA-Z_:]+`)
	var exprs []string
	var titles []string
	for _, p := range dash.Panels {
		titles = append(titles, p.Title)
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		exprs = append(exprs, v.Query)
	}
	seen := 0
	for _, e := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			seen++
			base := n
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(n, suf); ok && fams[b] != nil && fams[b].GetType().String() == "HISTOGRAM" {
					base = b
				}
			}
			if fams[base] == nil {
				t.Errorf("the dashboard queries %s, which batchd does not export (in %q)", n, e)
			}
		}
	}
	if seen < 20 {
		t.Errorf("only %d metric names in the dashboard's queries", seen)
	}
	all := strings.Join(titles, "; ")
	for _, want := range []string{"Throughput", "Time to first token", "Inter-token", "Queue", "KV cache", "fill rate",
		"efficiency", "Health", "Preemptions", "controller"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q panel in %s", want, all)
		}
	}
}
