package tokenizer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/batchd/batchd/gguf"
)

// FromGGUF builds the tokenizer a GGUF file's metadata describes (a model
// or a vocabulary-only file), with llama.cpp's defaults where a key is
// absent (src/llama-vocab.cpp, llama_vocab::impl::load).
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	kind, _ := f.MetaString("tokenizer.ggml.model")
	if kind != "llama" && kind != "gpt2" && kind != "gemma4" && kind != "bert" {
		return nil, fmt.Errorf("%w: tokenizer model %q (batchd supports \"llama\" (SentencePiece), \"gpt2\" (byte-level BPE), \"gemma4\" (BPE on SentencePiece pieces) and \"bert\" (WordPiece))",
			ErrUnsupported, kind)
	}
	raw, ok := f.Meta["tokenizer.ggml.tokens"].([]string)
	if !ok || len(raw) == 0 {
		return nil, fmt.Errorf("%w: tokenizer.ggml.tokens missing or not a string array", ErrInvalid)
	}
	types, _ := f.Meta["tokenizer.ggml.token_type"].([]int32)
	if types != nil && len(types) != len(raw) {
		return nil, invalid("%d token types for %d tokens", len(types), len(raw))
	}
	types = slices.Clone(types)
	if types == nil {
		types = make([]int32, len(raw))
		for i := range types {
			types[i] = TokenNormal
		}
	}
	scores, _ := f.Meta["tokenizer.ggml.scores"].([]float32)
	id := func(key string, def int) int {
		if v, ok := f.MetaUint(key); ok && v < uint64(len(raw)) {
			return int(v)
		}
		return def
	}
	var t *Tokenizer
	var err error
	switch kind {
	case "llama":
		t, err = spmFromGGUF(f, raw, scores, types, id)
	case "bert":
		t, err = wpmFromGGUF(f, raw, types, id)
	default:
		t, err = bpeFromGGUF(f, raw, types, id, kind == "gemma4")
	}
	if err != nil {
		return nil, err
	}
	if v, ok := f.Meta["tokenizer.ggml.add_bos_token"].(bool); ok {
		t.AddBOS = v
	}
	if kind == "gemma4" {
		t.AddBOS = true // llama.cpp overrides a false add_bos_token for Gemma 4 (its PR 21500)
	}
	if v, ok := f.Meta["tokenizer.ggml.add_eos_token"].(bool); ok {
		t.AddEOS = v
	}
	if t.kind != WPM { // WordPiece keeps 102 unless the file says
		t.sep = id("tokenizer.ggml.seperator_token_id", -1)
	}
	if pre, _ := f.MetaString("tokenizer.ggml.pre"); t.kind == WPM || pre == "roberta-bpe" || pre == "jina-v1-en" || pre == "jina-v2-code" {
		t.AddSep = true // llama.cpp's defaults for these vocabularies
	}
	if v, ok := f.Meta["tokenizer.ggml.add_sep_token"].(bool); ok {
		t.AddSep = v
	}
	if v, ok := f.Meta["tokenizer.ggml.add_space_prefix"].(bool); ok {
		t.AddSpacePrefix = v
	}
	// Decoding after BOS drops the dummy prefix, as SentencePiece and
	// run.c do (llama-server's stream keeps it).
	t.stripAfterBOS = t.kind == SPM && t.AddSpacePrefix
	t.eog = eogSet(f, t, raw, id)
	t.fim = fimSet(f, raw, id)
	t.initSpecials(raw)
	if name, _ := f.MetaString("general.name"); containsAny(strings.ToLower(name), "phi-3", "phi3") {
		// llama.cpp: Phi-3's special tokens eat the whitespace after them,
		// except <unk>, <s> and <|endoftext|>.
		t.setStrip(func(s *special) (bool, bool, bool) {
			keep := s.text == "<unk>" || s.text == "<s>" || s.text == "<|endoftext|>"
			return false, !keep, true
		})
	}
	return t, nil
}

func spmFromGGUF(f *gguf.File, raw []string, scores []float32, types []int32, id func(string, int) int) (*Tokenizer, error) {
	if len(scores) != len(raw) {
		return nil, fmt.Errorf("%w: tokenizer.ggml.scores missing or not %d float32s", ErrInvalid, len(raw))
	}
	spaced := make([]string, len(raw))
	for i, p := range raw {
		spaced[i] = strings.ReplaceAll(p, "\u2581", " ")
	}
	return New(spaced, scores, types, id("tokenizer.ggml.bos_token_id", 1),
		id("tokenizer.ggml.eos_token_id", 2), id("tokenizer.ggml.unknown_token_id", 0))
}

// bpeFromGGUF reads byte-level BPE, or with spm Gemma 4's BPE over
// SentencePiece pieces (U+2581 for a space, <0xNN> byte tokens), whose
// special ids have no defaults.
func bpeFromGGUF(f *gguf.File, raw []string, types []int32, id func(string, int) int, spm bool) (*Tokenizer, error) {
	merges, ok := f.Meta["tokenizer.ggml.merges"].([]string)
	if !ok {
		return nil, fmt.Errorf("%w: tokenizer.ggml.merges missing or not a string array", ErrInvalid)
	}
	pre, _ := f.MetaString("tokenizer.ggml.pre")
	def := 11
	if spm {
		def = -1
	}
	t := &Tokenizer{fim: [3]int{-1, -1, -1}, sep: -1, kind: BPE, pieces: raw, scores: make([]float32, len(raw)), types: types,
		lookup: make(map[string]int, len(raw)), text: make([]string, len(raw)),
		BOS: id("tokenizer.ggml.bos_token_id", def), EOS: id("tokenizer.ggml.eos_token_id", def),
		Unknown: id("tokenizer.ggml.unknown_token_id", -1), maxPiece: 1}
	for i, p := range raw {
		t.lookup[p] = i // a later duplicate wins, as in llama.cpp's map
		switch {
		case types[i] == TokenControl || types[i] == TokenUnknown || types[i] == TokenUserDefined:
			t.text[i] = p // written as they are
		case spm && types[i] == TokenByte:
			b, _ := pieceByte(p) // 0 for a piece that is none, as llama.cpp's strtol gives
			t.text[i] = string([]byte{b})
		case spm:
			t.text[i] = strings.ReplaceAll(p, "\u2581", " ")
		default:
			t.text[i] = decodeBPE(p)
		}
		t.maxPiece = max(t.maxPiece, len(t.text[i]))
	}
	var err error
	if t.bpe, err = newBPE(t, merges, pre, spm); err != nil {
		return nil, err
	}
	switch t.bpe.pre.name {
	case "llama-bpe":
		t.bpe.ignoreMerges, t.AddBOS = true, true
	}
	return t, nil
}

// pieceByte is the byte of a <0xNN> piece, as llama.cpp's token_to_byte
// reads it.
func pieceByte(p string) (byte, bool) {
	var b byte
	_, err := fmt.Sscanf(p, "<0x%02X>", &b)
	return b, err == nil
}

// eogTexts are the tokens llama.cpp treats as end-of-generation by their
// text; fimTexts the fill-in-the-middle pad, repo and separator tokens it
// finds by text when no key names them, which end generation too.
var (
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
		"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
		"<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}
	fimTexts = map[string][]string{
		"fim_pad": {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
		"fim_rep": {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
		"fim_sep": {"<|file_sep|>"},
	}
)

// eogSet derives the end-of-generation set as llama.cpp does: the FIM pad,
// repo and separator tokens, every token whose text says end of turn or
// text (made a control token if it was not), and EOS, EOT and EOM.
func eogSet(f *gguf.File, t *Tokenizer, raw []string, id func(string, int) int) []int {
	var set []int
	add := func(i int) {
		if i >= 0 && !slices.Contains(set, i) {
			set = append(set, i)
		}
	}
	for _, key := range []string{"fim_pad", "fim_rep", "fim_sep"} {
		if k := id("tokenizer.ggml."+key+"_token_id", -1); k >= 0 {
			add(k)
			continue
		}
		for _, text := range fimTexts[key] {
			if i := slices.Index(raw, text); i >= 0 {
				add(i)
				t.types[i] = TokenControl
				break
			}
		}
	}
	for i, p := range raw {
		if slices.Contains(eogTexts, p) {
			add(i)
			t.types[i] = TokenControl
		}
	}
	add(t.EOS)
	add(id("tokenizer.ggml.eot_token_id", -1))
	add(id("tokenizer.ggml.eom_token_id", -1))
	// As llama.cpp v0.5.0: with harmony's <|return|> and <|call|> (or
	// solar-open's <|calls|> and <|flush|>), <|end|> ends a message, not
	// the generation; beside Gemma 4's <|tool_response>, </s> is text.
	has := func(text string) int {
		for _, i := range set {
			if raw[i] == text {
				return i
			}
		}
		return -1
	}
	if e := has("<|end|>"); e >= 0 && (has("<|return|>") >= 0 && has("<|call|>") >= 0 || has("<|calls|>") >= 0 && has("<|flush|>") >= 0) {
		set = slices.DeleteFunc(set, func(i int) bool { return i == e })
		t.types[e] = TokenUserDefined
	}
	if s := has("</s>"); s >= 0 && has("<|tool_response>") >= 0 {
		set = slices.DeleteFunc(set, func(i int) bool { return i == s })
		t.types[s] = TokenNormal
	}
	slices.Sort(set)
	return set
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
