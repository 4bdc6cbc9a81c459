package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/tokenizer"
)

// TestEncodersBesideChat: a chat model and two encoders (bert with CLS
// pooling, nomic-bert with MEAN) resident in one daemon. While a
// generation streams on the chat model, every text's vector from each
// encoder, through msgpack (all texts in one request), the OpenAI SDK and
// Ollama's client, is llama.cpp's within the references' 1e-3; an
// encoder refuses to generate with a 400 and Ollama's show says it embeds.
func TestEncodersBesideChat(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "embed")
	refs := map[string]embedReference{"bge": readEmbedReference(t, "tiny-bert-bge"), "nomic": readEmbedReference(t, "tiny-nomic-bert")}
	chat := filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")
	cfg := fmt.Sprintf("[models.bge]\npath = %q\n[models.nomic]\npath = %q\n",
		filepath.Join(dir, "tiny-bert-bge.gguf"), filepath.Join(dir, "tiny-nomic-bert.gguf"))
	td := startDaemonFlags(t, cfg, ServeFlags{Model: chat, HTTPSocket: "http"})
	ctx := context.Background()
	var wg sync.WaitGroup
	var gen *client.Result
	var genErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		gen, genErr = td.dial(t).Generate(ctx, client.Request{Prompt: "Once upon a time", MaxTokens: 200, IgnoreEOS: true}, nil)
	}()
	oc, oll := td.openai(t), td.ollama(t)
	for name, ref := range refs {
		var texts []string
		for _, tx := range ref.Texts {
			texts = append(texts, tx.Text)
		}
		vecs, _, err := td.dial(t).Embed(ctx, client.EmbedRequest{Model: name, Input: texts})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i, tx := range ref.Texts {
			worst = max(worst, worstDiff(vecs[i], f64s(tx.Embedding)))
			one, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: name,
				Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(tx.Text)}})
			if err != nil {
				t.Fatal(err)
			}
			if d := worstDiff(vecs[i], one.Data[0].Embedding); d != 0 {
				t.Errorf("%s text %d: alone over HTTP %g from batched", name, i, d)
			}
			if int(one.Usage.PromptTokens) != len(tx.Tokens) {
				t.Errorf("%s text %d: %d prompt tokens, llama.cpp %d", name, i, one.Usage.PromptTokens, len(tx.Tokens))
			}
		}
		t.Logf("%s: %d texts, max |diff| from llama.cpp %.2g", name, len(texts), worst)
		if worst > 1e-3 {
			t.Errorf("%s: max |diff| %g over 1e-3", name, worst)
		}
		er, err := oll.Embed(ctx, &api.EmbedRequest{Model: name, Input: texts[:4]})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if d := worstDiff(vecs[i], f64s(er.Embeddings[i])); d != 0 {
				t.Errorf("%s /api/embed %d: %g from msgpack's", name, i, d)
			}
		}
	}
	// Cut to bert's 512 positions, the text loses its end and keeps [SEP].
	long := strings.Repeat("many words here ", 200)
	cut, n, err := td.dial(t).Embed(ctx, client.EmbedRequest{Model: "bge", Input: []string{long}})
	if err != nil || n != 512 {
		t.Fatalf("an over-long input, truncated: %d tokens, %v", n, err)
	}
	bge, err := model.Load(filepath.Join(dir, "tiny-bert-bge.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer bge.Close()
	toks, err := bge.Tokenizer.Tokenize(ctx, long, tokenizer.Options{AddSpecial: true})
	if err != nil || len(toks) < 600 || toks[0] != 101 {
		t.Fatalf("%d tokens from %v, %v", len(toks), toks[:1], err)
	}
	byIDs, _, err := td.dial(t).Embed(ctx, client.EmbedRequest{Model: "bge", Tokens: [][]int{append(toks[:511:511], 102)}})
	if err != nil || worstDiff(cut[0], f64s(byIDs[0])) != 0 {
		t.Errorf("the cut text is not its first 511 tokens and [SEP]: %v", err)
	}
	_, err = oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "bge", MaxTokens: openai.Int(4),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Errorf("a chat completion on an encoder: %v, want a 400", err)
	}
	gerr := oll.Generate(ctx, &api.GenerateRequest{Model: "nomic", Prompt: "hi"}, func(api.GenerateResponse) error { return nil })
	var se api.StatusError
	if !errors.As(gerr, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.Error(), "does not generate") {
		t.Errorf("/api/generate on an encoder: %v, want a 400 saying it does not generate", gerr)
	}
	show, err := oll.Show(ctx, &api.ShowRequest{Model: "bge"})
	if err != nil || !slices.Equal(capsOf(show), []string{"embedding"}) {
		t.Errorf("show bge: %v %v, want [embedding]", show, err)
	}
	wg.Wait()
	if genErr != nil || gen.Usage.CompletionTokens != 200 {
		t.Errorf("the generation beside: %+v %v", gen, genErr)
	}
}

func capsOf(s *api.ShowResponse) []string {
	var out []string
	for _, c := range s.Capabilities {
		out = append(out, string(c))
	}
	return out
}
