package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	client "github.com/batchd/batchd/clients/go"
)

type runFunc = func(ctx context.Context, socket string, args []string, stdout, stderr io.Writer) error

func generateCmd(fs *flag.FlagSet) runFunc {
	var r client.Request
	var stops stringsFlag
	fs.IntVar(&r.MaxTokens, "max-tokens", 0, "generated tokens at most (default: up to the context)")
	temp := fs.Float64("temperature", 0, "sampling temperature (0 = greedy)")
	topP := fs.Float64("top-p", 0, "nucleus sampling mass (0 = off)")
	fs.IntVar(&r.TopK, "top-k", 0, "keep the k most likely tokens (0 = off)")
	fs.Int64Var(&r.Seed, "seed", 0, "sampling seed (-1: random)")
	fs.Var(&stops, "stop", "stop string (repeatable)")
	fs.IntVar(&r.Priority, "priority", 0, "priority (higher first, under the priority policy)")
	fs.StringVar(&r.Channel, "channel", "", "QoS channel: realtime, standard or bulk")
	fs.StringVar(&r.Model, "model", "", "the model (batchctl models; default: the daemon's default)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object instead of streaming text")
	verbose := fs.Bool("verbose", false, "print the request id (for cancel) and the usage to stderr")
	schema := fs.String("schema", "", "JSON Schema file the output must match (structured output)")
	grammarFile := fs.String("grammar", "", "GBNF grammar file the output must match")
	fs.BoolVar(&r.JSONObject, "json-object", false, "the output is any JSON object")
	fs.BoolVar(&r.SchemaNotStrict, "schema-not-strict", false, "ignore schema keywords batchd cannot enforce instead of refusing them")
	return func(ctx context.Context, socket string, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usageErr{fmt.Errorf("want exactly one PROMPT argument, got %d (quote the prompt)", len(args))}
		}
		if err := readStructure(&r, *schema, *grammarFile); err != nil {
			return err
		}
		r.Prompt, r.Stop = args[0], stops
		r.Temperature, r.TopP = float32(*temp), float32(*topP)
		if *verbose {
			r.OnAccepted = func(id uint64) { fmt.Fprintf(stderr, "request %d (batchctl cancel %d)\n", id, id) }
		}
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
		printed := false
		res, err := c.Generate(ctx, r, func(d client.Delta) error {
			printed = printed || d.Text != ""
			_, err := io.WriteString(stdout, d.Text)
			return err
		})
		if printed {
			fmt.Fprintln(stdout) // end the streamed line; none before an error alone
		}
		if err != nil {
			return err
		}
		if *verbose {
			fmt.Fprintf(stderr, "finish %s: %d prompt tokens (%d cached), %d generated, %.2f s\n", res.FinishReason,
				res.Usage.PromptTokens, res.Usage.CachedPromptTokens, res.Usage.CompletionTokens, res.Timings.TotalS)
		}
		if res.FinishReason != "stop" && res.FinishReason != "length" {
			return fmt.Errorf("request %d ended: %s", res.RequestID, res.FinishReason)
		}
		return nil
	}
}

func nonNil(t []int) []int {
	if t == nil {
		return []int{}
	}
	return t
}

func cancelCmd(*flag.FlagSet) runFunc {
	return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
		if len(args) != 1 {
			return usageErr{errors.New("want one request ID (batchctl stats lists them)")}
		}
		id, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil || id == 0 {
			return usageErr{fmt.Errorf("request ID %q is not a positive number", args[0])}
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
}

func reloadCmd(*flag.FlagSet) runFunc {
	return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
		c, err := dialNoArgs(ctx, socket, args)
		if err != nil {
			return err
		}
		defer c.Close()
		r, err := c.Reload(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "config reloaded")
		if len(r.RestartNeeded) > 0 {
			fmt.Fprintf(stdout, "restart needed for: %s\n", strings.Join(r.RestartNeeded, ", "))
		}
		return nil
	}
}

func statsCmd(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the raw figures as JSON")
	return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
		c, err := dialNoArgs(ctx, socket, args)
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := c.Stats(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(s)
		}
		printStats(stdout, s)
		return nil
	}
}

func healthCmd(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
		c, err := dialNoArgs(ctx, socket, args)
		if err != nil {
			return err
		}
		defer c.Close()
		h, err := c.Health(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			if err := json.NewEncoder(stdout).Encode(map[string]any{"state": h.State, "model": h.Model, "version": h.Version}); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(stdout, "state    %s\nversion  %s\n", h.State, h.Version)
			printModel(stdout, h.Model)
		}
		if h.State != "ready" {
			return fmt.Errorf("batchd is %s", h.State)
		}
		return nil
	}
}

func versionCmd(*flag.FlagSet) runFunc {
	return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
		if len(args) != 0 {
			return usageErr{fmt.Errorf("unexpected argument %q", args[0])}
		}
		fmt.Fprintf(stdout, "batchctl %s\n", version)
		c, err := dial(ctx, socket)
		if err != nil {
			fmt.Fprintf(stdout, "batchd   not reachable: %v\n", explain(err, client.SocketPath(socket)))
			return nil
		}
		defer c.Close()
		fmt.Fprintf(stdout, "batchd   %s (protocol %d, %s)\n", c.Server.Server, c.Server.Version, client.SocketPath(socket))
		return nil
	}
}

// dialNoArgs connects for a command that takes no positional arguments.
func dialNoArgs(ctx context.Context, socket string, args []string) (*client.Client, error) {
	if len(args) != 0 {
		return nil, usageErr{fmt.Errorf("unexpected argument %q", args[0])}
	}
	return dial(ctx, socket)
}

// readStructure reads --schema and --grammar files into the request.
func readStructure(r *client.Request, schema, grammarFile string) error {
	if schema != "" && grammarFile != "" {
		return usageErr{errors.New("give --schema or --grammar, not both")}
	}
	if schema != "" {
		b, err := os.ReadFile(schema)
		if err != nil {
			return err
		}
		r.JSONSchema = b
	}
	if grammarFile != "" {
		b, err := os.ReadFile(grammarFile)
		if err != nil {
			return err
		}
		r.Grammar = string(b)
	}
	return nil
}
