package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	client "github.com/batchd/batchd/clients/go"
)

// warmCmd prefills a JSONL file's prompts ({"prompt": TEXT}) and chat
// prefixes ({"messages": [...]}) into the model's prefix cache, e.g. from
// a timer before a known peak.
func warmCmd(fs *flag.FlagSet) runFunc {
	model := fs.String("model", "", "the model (default: the daemon's default)")
	return func(ctx context.Context, socket string, args []string, stdout, _ io.Writer) error {
		if len(args) != 1 {
			return usageErr{fmt.Errorf("want one FILE (JSONL: {\"prompt\": TEXT} or {\"messages\": [...]} per line; - is stdin)")}
		}
		prompts, chats, err := readWarm(args[0])
		if err != nil {
			return err
		}
		c, err := dial(ctx, socket)
		if err != nil {
			return err
		}
		defer c.Close()
		toks, cached, err := c.Warm(ctx, *model, prompts, chats)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "warmed %d prompts and %d chats: %d prompt tokens, %d of them already cached\n",
			len(prompts), len(chats), toks, cached)
		return nil
	}
}

func readWarm(path string) ([]string, []json.RawMessage, error) {
	in := os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		in = f
	}
	p, c, err := client.ReadWarmFile(in, path)
	if err != nil {
		return nil, nil, usageErr{err}
	}
	return p, c, nil
}
