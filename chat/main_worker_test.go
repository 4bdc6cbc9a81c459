package chat

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as a chat template worker: the
// templates' renders run in child processes that start this binary with
// WorkerArg.
func TestMain(m *testing.M) {
	if IsWorker(os.Args) {
		os.Exit(RunWorker(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}
