package main

import (
	"os"
	"testing"

	"github.com/batchd/batchd/chat"
)

// TestMain lets the test binary serve as the chat templates' worker, as
// batchd does (chat.WorkerArg).
func TestMain(m *testing.M) {
	if chat.IsWorker(os.Args) {
		os.Exit(chat.RunWorker(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}
