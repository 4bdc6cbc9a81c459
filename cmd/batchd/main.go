// Command batchd is the batchd inference daemon (batchd serve) and its
// in-process tools: generate, profile, tokenize, template, grammar, tune.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], &runEnv{stdout: os.Stdout, stderr: os.Stderr})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "batchd:", err)
		if isUsage(err) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
