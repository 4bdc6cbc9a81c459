package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/tokenizer"
)

// maxTokenizeInput bounds what `batchd tokenize` reads from a file or stdin.
const maxTokenizeInput = 64 << 20

// runTokenize is `batchd tokenize`: the ids of a text, like llama.cpp's
// llama-tokenize (one "id -> 'piece'" line per token; --ids prints [1, 2]),
// or with --json one object {"ids": [...], "pieces": [...]}. It reads only
// the vocabulary, so vocabulary-only GGUF files work.
func runTokenize(ctx context.Context, args []string, env *runEnv) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	modelPath := fs.String("model", "", "GGUF model or vocabulary file (or a llama2.c checkpoint with --tokenizer)")
	tokPath := fs.String("tokenizer", "", "llama2.c tokenizer file, for a llama2.c checkpoint")
	file := fs.String("file", "", "read the text from this file (- for standard input)")
	noBOS := fs.Bool("no-bos", false, "do not add the special tokens the vocabulary adds (BOS)")
	parse := fs.Bool("parse-special", false, "turn special-token text (<|im_start|>, <s>) into those tokens")
	ids := fs.Bool("ids", false, "print only the ids, as [1, 2, 3]")
	asJSON := fs.Bool("json", false, `print {"ids": [...], "pieces": [...]}`)
	var texts []string
	for {
		if err := fs.Parse(args); err != nil {
			return usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		texts = append(texts, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if *modelPath == "" || (len(texts) == 0) == (*file == "") || len(texts) > 1 {
		return usageError{errors.New("tokenize needs --model FILE and one TEXT or --file F: batchd tokenize --model FILE [--no-bos] [--parse-special] [--json] (TEXT | --file F)")}
	}
	text, err := tokenizeInput(texts, *file)
	if err != nil {
		return err
	}
	tok, err := loadTokenizer(*modelPath, *tokPath)
	if err != nil {
		return err
	}
	toks, err := tok.Tokenize(ctx, text, tokenizer.Options{AddSpecial: !*noBOS, ParseSpecial: *parse})
	if err != nil {
		return err
	}
	pieces := make([]string, len(toks))
	for i, id := range toks {
		pieces[i] = tok.PieceText(id)
	}
	switch {
	case *asJSON:
		return json.NewEncoder(env.stdout).Encode(map[string]any{"ids": toks, "pieces": pieces})
	case *ids:
		s := make([]string, len(toks))
		for i, id := range toks {
			s[i] = fmt.Sprint(id)
		}
		_, err = fmt.Fprintf(env.stdout, "[%s]\n", strings.Join(s, ", "))
		return err
	}
	for i, id := range toks {
		if _, err := fmt.Fprintf(env.stdout, "%6d -> '%s'\n", id, pieces[i]); err != nil {
			return err
		}
	}
	return nil
}

func tokenizeInput(texts []string, file string) (string, error) {
	if file == "" {
		return texts[0], nil
	}
	var r io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxTokenizeInput+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxTokenizeInput {
		return "", fmt.Errorf("input over %d MiB", maxTokenizeInput>>20)
	}
	return string(b), nil
}

// loadTokenizer reads a GGUF file's vocabulary, or loads a llama2.c
// checkpoint with its tokenizer file.
func loadTokenizer(path, tokPath string) (*tokenizer.Tokenizer, error) {
	if tokPath == "" {
		return model.LoadVocab(path)
	}
	m, err := model.Load(path, model.LoadOptions{Tokenizer: tokPath})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Tokenizer, nil
}
