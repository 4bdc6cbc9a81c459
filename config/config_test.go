package config

import (
	"strings"
	"testing"
	"time"
)

// TestPackagedConfigLoads: the shipped /etc/batchd/batchd.toml had
// log_level, drain_timeout and idle_exit_after under [engine], so the
// packaged service exited with "unknown keys" before serving anything.
func TestPackagedConfigLoads(t *testing.T) {
	c, err := LoadFile("../packaging/batchd.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "info" || c.DrainTimeout.Duration != 30*time.Second || c.Server.Socket != "/run/batchd/batchd.sock" ||
		c.Server.SocketGroup != "batchd" {
		t.Fatalf("packaged config read as %+v", c)
	}
	// Everything but the model file (not installed here) validates.
	if err := c.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "model.path") && !strings.Contains(line, `group "batchd"`) {
				t.Errorf("packaged config: %s", line)
			}
		}
	}
}
