// Command batchctl talks to a running batchd over its Unix socket:
//
//	batchctl [--socket PATH] generate [flags] PROMPT
//	batchctl [--socket PATH] cancel ID
//	batchctl [--socket PATH] stats [--json]
//	batchctl [--socket PATH] health [--json]
//
// The socket defaults to $BATCHD_SOCKET, then /run/batchd/batchd.sock.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	client "github.com/batchd/batchd/clients/go"
)

const usage = `usage: batchctl [--socket PATH] <command> [flags]

commands:
  generate PROMPT   generate text, streaming it as it arrives
  cancel ID         cancel a request by its id
  stats             show the engine's figures
  health            show the daemon's state (exit status 0 only when ready)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	global := flag.NewFlagSet("batchctl", flag.ContinueOnError)
	global.SetOutput(stderr)
	socket := global.String("socket", "", "daemon socket (default $BATCHD_SOCKET or "+client.DefaultSocket+")")
	global.Usage = func() { fmt.Fprint(stderr, usage); global.PrintDefaults() }
	if err := global.Parse(args); err != nil {
		return 2
	}
	rest := global.Args()
	if len(rest) == 0 {
		global.Usage()
		return 2
	}
	var err error
	switch rest[0] {
	case "generate":
		err = generate(ctx, *socket, rest[1:], stdout, stderr)
	case "cancel":
		err = cancel(ctx, *socket, rest[1:], stdout)
	case "stats":
		err = stats(ctx, *socket, rest[1:], stdout)
	case "health":
		err = health(ctx, *socket, rest[1:], stdout)
	default:
		fmt.Fprintf(stderr, "batchctl: unknown command %q\n", rest[0])
		global.Usage()
		return 2
	}
	var ue usageErr
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "batchctl:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "batchctl:", err)
		return 1
	}
}

type usageErr struct{ error }

func dial(ctx context.Context, socket string) (*client.Client, error) {
	return client.Dial(ctx, socket)
}

func generate(ctx context.Context, socket string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var r client.Request
	var stops stringsFlag
	fs.IntVar(&r.MaxTokens, "max-tokens", 0, "generated tokens at most (default: up to the context)")
	temp := fs.Float64("temperature", 0, "sampling temperature (0 = greedy)")
	topP := fs.Float64("top-p", 0, "nucleus sampling mass (0 = off)")
	fs.IntVar(&r.TopK, "top-k", 0, "keep the k most likely tokens (0 = off)")
	fs.Uint64Var(&r.Seed, "seed", 0, "sampling seed")
	fs.Var(&stops, "stop", "stop string (repeatable)")
	fs.IntVar(&r.Priority, "priority", 0, "priority (higher first, under the priority policy)")
	fs.StringVar(&r.Channel, "channel", "", "QoS channel: realtime, standard or bulk")
	asJSON := fs.Bool("json", false, "print the result as one JSON object instead of streaming text")
	// Accept flags after the prompt too: batchctl generate "text" --max-tokens 5.
	var prompt []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return usageErr{err}
		}
		args = fs.Args()
		if len(args) > 0 {
			prompt = append(prompt, args[0])
			args = args[1:]
		}
	}
	if len(prompt) != 1 {
		return usageErr{errors.New("generate takes exactly one PROMPT argument")}
	}
	r.Prompt, r.Stop = prompt[0], stops
	r.Temperature, r.TopP = float32(*temp), float32(*topP)
	c, err := dial(ctx, socket)
	if err != nil {
		return err
	}
	defer c.Close()
	if *asJSON {
		res, err := c.Generate(ctx, r, nil)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(map[string]any{
			"request_id": res.RequestID, "prompt_tokens": res.PromptTokens, "output_tokens": nonNil(res.Tokens),
			"text": res.Text, "finish_reason": res.FinishReason, "usage": res.Usage, "timings": res.Timings,
			"preemptions": res.Preemptions})
	}
	res, err := c.Generate(ctx, r, func(d client.Delta) error {
		_, err := io.WriteString(stdout, d.Text)
		return err
	})
	fmt.Fprintln(stdout)
	if err != nil {
		return err
	}
	if res.FinishReason != "stop" && res.FinishReason != "length" {
		return fmt.Errorf("request %d ended: %s", res.RequestID, res.FinishReason)
	}
	return nil
}

func nonNil(t []int) []int {
	if t == nil {
		return []int{}
	}
	return t
}

func cancel(ctx context.Context, socket string, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return usageErr{errors.New("cancel takes one request ID")}
	}
	id, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil {
		return usageErr{fmt.Errorf("request ID %q: %w", args[0], err)}
	}
	c, err := dial(ctx, socket)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Cancel(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cancelled %d\n", id)
	return nil
}

// jsonCommand parses a command that takes only --json and dials the daemon.
func jsonCommand(ctx context.Context, name, socket string, args []string) (c *client.Client, asJSON bool, err error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	j := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return nil, false, usageErr{err}
	}
	c, err = dial(ctx, socket)
	return c, *j, err
}

func stats(ctx context.Context, socket string, args []string, stdout io.Writer) error {
	c, asJSON, err := jsonCommand(ctx, "stats", socket, args)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.Stats(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(s)
	}
	printTable(stdout, "", s)
	return nil
}

// printTable prints a nested map as aligned "key  value" lines, sorted.
func printTable(w io.Writer, prefix string, m map[string]any) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := m[k].(type) {
		case map[string]any:
			printTable(w, prefix+k+".", v)
		default:
			fmt.Fprintf(w, "%-36s %v\n", prefix+k, v)
		}
	}
}

func health(ctx context.Context, socket string, args []string, stdout io.Writer) error {
	c, asJSON, err := jsonCommand(ctx, "health", socket, args)
	if err != nil {
		return err
	}
	defer c.Close()
	h, err := c.Health(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if err := json.NewEncoder(stdout).Encode(map[string]any{"state": h.State, "model": h.Model, "version": h.Version}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "state    %s\nversion  %s\n", h.State, h.Version)
		printTable(stdout, "model.", h.Model)
	}
	if h.State != "ready" {
		return fmt.Errorf("batchd is %s", h.State)
	}
	return nil
}
