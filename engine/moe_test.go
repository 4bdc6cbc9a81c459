package engine

import (
	"context"
	"testing"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestExpertLoadInStats: a mixture-of-experts model's stats count the
// router's work: every layer of every step routes its tokens to Used
// experts each, and the experts touched are at least Used and at most
// the pairs (the experts' count) a layer.
func TestExpertLoadInStats(t *testing.T) {
	path, _ := synth.WriteFile(t, synth.TinyMoE(quant.F32, 128, 3))
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e := startEngine(t, m, engineOpts{})
	ctx := context.Background()
	var streams []*Stream
	for _, p := range []string{"the cat", "a dog ran", "sun"} {
		st, err := e.Submit(ctx, Request{Prompt: p, MaxTokens: 5, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	for _, st := range streams {
		if _, _, _, err := st.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s := e.Stats()
	c := m.Config
	if s.ExpertLayers != s.Steps*uint64(c.Layers) || s.ExpertPairs != s.ForwardTokens*uint64(c.Layers*c.MoE.Used) {
		t.Fatalf("%d layer passes over %d steps, %d pairs over %d tokens: want every layer, %d experts a token",
			s.ExpertLayers, s.Steps, s.ExpertPairs, s.ForwardTokens, c.MoE.Used)
	}
	if s.ExpertTouched < s.ExpertLayers*uint64(c.MoE.Used) || s.ExpertTouched > s.ExpertPairs ||
		s.ExpertTouched > s.ExpertLayers*uint64(c.MoE.Experts) {
		t.Fatalf("%d experts touched over %d layer passes, %d pairs", s.ExpertTouched, s.ExpertLayers, s.ExpertPairs)
	}
}
