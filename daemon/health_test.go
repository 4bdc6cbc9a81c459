package daemon

import (
	"testing"
)

// TestAdaptiveControlIsOn: engine.adaptive (default true) reached the
// engine again (the config stopped passing it when the engine options were
// rebuilt, so no daemon ran the controller); false turns it off.
func TestAdaptiveControlIsOn(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   bool
	}{{"", true}, {"[engine]\nadaptive = false\n", false}} {
		td := startDaemon(t, tc.config)
		if got := td.d.defaultModel().Engine.Stats().Controller != nil; got != tc.want {
			t.Errorf("config %q: controller running %v, want %v", tc.config, got, tc.want)
		}
	}
}
