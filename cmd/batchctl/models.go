package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
)

// modelsCmd lists every model (models) or the loaded ones (ps).
func modelsCmd(loadedOnly bool) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		asJSON := fs.Bool("json", false, "print the list as JSON")
		return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
			c, err := dialNoArgs(ctx, socket, args)
			if err != nil {
				return err
			}
			defer c.Close()
			list, err := c.Models(ctx)
			if loadedOnly {
				list, err = c.Running(ctx)
			}
			if err != nil {
				return err
			}
			if *asJSON {
				if list == nil {
					list = []wire.ModelEntry{}
				}
				return json.NewEncoder(stdout).Encode(list)
			}
			printModels(stdout, list)
			return nil
		}
	}
}

func printModels(w io.Writer, list []wire.ModelEntry) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tSIZE\tMEMORY\tREQUESTS\tUNTIL\tPATH")
	for _, m := range list {
		name := m.Name
		if m.Default {
			name += " (default)"
		}
		until := ""
		switch {
		case m.State != "loaded":
		case m.KeepAlive < 0:
			until = "forever"
		case m.ExpiresAt != 0:
			until = time.Unix(m.ExpiresAt, 0).Format(time.DateTime)
		case m.Requests > 0:
			until = "in use"
		}
		state := m.State
		if m.Error != "" {
			state += ": " + m.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", name, state, mib(m.Size), mib(m.Bytes), m.Requests, until, m.Path)
	}
	_ = tw.Flush()
}

func mib(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// loadCmd loads a model (or unloads it).
func loadCmd(unload bool) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		keepAlive := ""
		if !unload {
			fs.StringVar(&keepAlive, "keep-alive", "", `how long it stays loaded once idle ("10m", "-1" forever; default the model's)`)
		}
		return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
			if len(args) != 1 {
				return usageErr{fmt.Errorf("want exactly one MODEL argument, got %d", len(args))}
			}
			c, err := dial(ctx, socket)
			if err != nil {
				return err
			}
			defer c.Close()
			if unload {
				if err := c.Unload(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s unloads once idle\n", args[0])
				return nil
			}
			start := time.Now()
			if err := c.Load(ctx, args[0], keepAlive); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s loaded (%.2fs)\n", args[0], time.Since(start).Seconds())
			return nil
		}
	}
}

// embedCmd prints the embeddings of its arguments, one JSON array each.
func embedCmd(fs *flag.FlagSet) runFunc {
	model := fs.String("model", "", "the embedding model (batchctl models; default: the daemon's default)")
	dims := fs.Int("dimensions", 0, "keep the first N values, normalised again (0: all)")
	raw := fs.Bool("raw", false, "the pooled state as it is, not a unit vector")
	noTruncate := fs.Bool("no-truncate", false, "refuse an input longer than the context instead of cutting it")
	return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
		if len(args) == 0 {
			return usageErr{fmt.Errorf("want one or more TEXT arguments")}
		}
		c, err := dial(ctx, socket)
		if err != nil {
			return err
		}
		defer c.Close()
		vecs, _, err := c.Embed(ctx, client.EmbedRequest{Model: *model, Input: args, Dimensions: *dims, Raw: *raw, NoTruncate: *noTruncate})
		if err != nil {
			return err
		}
		enc := json.NewEncoder(stdout)
		for _, v := range vecs {
			if err := enc.Encode(v); err != nil {
				return err
			}
		}
		return nil
	}
}

// rerankCmd scores documents against a query: a line per document, best
// first (score, index, text), or the results as JSON.
func rerankCmd(fs *flag.FlagSet) runFunc {
	model := fs.String("model", "", "the reranker (batchctl models; default: the daemon's default)")
	topN := fs.Int("top-n", 0, "print only the best N (0: all)")
	asJSON := fs.Bool("json", false, "print the results as JSON: [{index, score}]")
	return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
		if len(args) < 2 {
			return usageErr{fmt.Errorf("want a QUERY and one or more DOC arguments")}
		}
		c, err := dial(ctx, socket)
		if err != nil {
			return err
		}
		defer c.Close()
		res, _, err := c.Rerank(ctx, client.RerankRequest{Model: *model, Query: args[0], Documents: args[1:], TopN: *topN})
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(res)
		}
		for _, r := range res {
			fmt.Fprintf(stdout, "%.6f\t%d\t%s\n", r.Score, r.Index, oneLine(args[1+r.Index]))
		}
		return nil
	}
}

// oneLine keeps a document's first line, cut to 80 runes, for a table.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return s
}
