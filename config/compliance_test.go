package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestComplianceChecks: each rule's conditions, one violation at a time.
func TestComplianceChecks(t *testing.T) {
	model := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := func() Config {
		c := Default()
		c.Model.Path = model
		c.Routing.Tags = map[string]string{"medical": "realtime"}
		rt := c.Channels["realtime"]
		rt.Isolated = true
		c.Channels["realtime"] = rt
		c.Compliance = []ComplianceRule{{Name: "hipaa", Tags: []string{"medical"}, Channel: "realtime", Isolated: true,
			MaxBatchWindow: Duration{150e6}, MaxDeadline: Duration{20e9}, MaxTTFTTarget: Duration{1e9}}}
		return c
	}
	c := base()
	if err := c.Validate(); err != nil {
		t.Fatalf("the base config: %v", err)
	}
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"tag routed elsewhere":             {func(c *Config) { c.Routing.Tags["medical"] = "standard" }, "must route to channel realtime"},
		"window over 150ms":                {func(c *Config) { c.Engine.Mode, c.Engine.BatchWindow = "dynamic", Duration{200e6} }, "batch_window"},
		"dynamic's default window is fine": {func(c *Config) { c.Engine.Mode = "dynamic" }, ""},
		"deadline over": {func(c *Config) {
			rt := c.Channels["realtime"]
			rt.Deadline = Duration{60e9}
			c.Channels["realtime"] = rt
		}, "max_deadline"},
		"no deadline": {func(c *Config) {
			rt := c.Channels["realtime"]
			rt.Deadline = Duration{}
			c.Channels["realtime"] = rt
		}, "max_deadline"},
		"ttft target over": {func(c *Config) {
			rt := c.Channels["realtime"]
			rt.TTFTTarget = Duration{2e9}
			c.Channels["realtime"] = rt
		}, "max_ttft_target"},
		"not isolated": {func(c *Config) { rt := c.Channels["realtime"]; rt.Isolated = false; c.Channels["realtime"] = rt }, "must be isolated"},
		"no channel":   {func(c *Config) { c.Compliance[0].Channel = "" }, "needs tags and a channel"},
	} {
		c := base()
		tc.edit(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "hipaa")):
			t.Errorf("%s: %v, want an error naming the rule and %q", name, err, tc.want)
		}
	}
}
