// Command batchd is the batchd inference daemon and its in-process tools.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/batchd/batchd/daemon"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := daemon.Run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "batchd:", err)
		if daemon.IsUsage(err) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
