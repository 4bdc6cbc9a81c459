package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// On a machine without the NVIDIA driver (CI), profile reports the CPU
// profile, why NVML was not used, and a plan for the model.
func TestProfileCommand(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"profile", "--json", "--model", testmodels.Path(t, "stories260K.gguf"),
		"--kv-blocks", "100000000"}, &runEnv{stdout: &out, stderr: &errb})
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var res struct {
		NVML    string `json:"nvml"`
		Profile string `json:"profile"`
		Plan    struct {
			Profile  string   `json:"profile"`
			KVBlocks int      `json:"kv_blocks"`
			Context  int      `json:"max_context"`
			Warnings []string `json:"warnings"`
		} `json:"plan"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.Plan.KVBlocks <= 0 || res.Plan.Context != 512 || !strings.Contains(strings.Join(res.Plan.Warnings, " "), "clamped") {
		t.Fatalf("plan %+v", res.Plan)
	}
	if res.Profile == "cpu" && !strings.HasPrefix(res.NVML, "not used: ") {
		t.Fatalf("CPU profile without the reason NVML was not used: %q", res.NVML)
	}
}
