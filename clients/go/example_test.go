package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	client "github.com/batchd/batchd/clients/go"
)

// Generate streams text to stdout as it arrives and returns the whole result.
func ExampleClient_Generate() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "") // $BATCHD_SOCKET or /run/batchd/batchd.sock
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer c.Close()
	res, err := c.Generate(ctx, client.Request{Prompt: "Once upon a time", MaxTokens: 64},
		func(d client.Delta) error {
			fmt.Print(d.Text)
			return nil
		})
	if errors.Is(err, client.ErrQueueFull) {
		fmt.Fprintln(os.Stderr, "busy, try again later")
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Printf("\n%s after %d tokens\n", res.FinishReason, res.Usage.CompletionTokens)
}

// Stream yields deltas; breaking out of the loop cancels the request.
func ExampleClient_Stream() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "")
	if err != nil {
		return
	}
	defer c.Close()
	for d, err := range c.Stream(ctx, client.Request{Prompt: "Lily wanted to"}) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			break
		}
		fmt.Print(d.Text)
		if len(d.Text) > 200 {
			break
		}
	}
}
