package tokenizer

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"
)

// Token types, as GGUF's tokenizer.ggml.token_type numbers them.
const (
	TokenNormal      int32 = 1
	TokenUnknown     int32 = 2
	TokenControl     int32 = 3
	TokenUserDefined int32 = 4
	TokenUnused      int32 = 5
	TokenByte        int32 = 6
)

// Kind is a vocabulary's tokenizer algorithm.
type Kind uint8

const (
	// SPM is SentencePiece BPE (tokenizer.ggml.model "llama", llama2.c):
	// a dummy-prefix space, codepoints with byte fallback, then greedy
	// merges of the best-scoring adjacent pair (leftmost on a tie).
	SPM Kind = iota
	// BPE is byte-level BPE (tokenizer.ggml.model "gpt2"): pre-tokenizer
	// words, GPT-2's byte alphabet, merges by rank.
	BPE
	// WPM is WordPiece (tokenizer.ggml.model "bert"): llama.cpp's BERT
	// normalisation, words split by greedy longest match, [CLS] and [SEP].
	WPM
)

// Tokenizer is a vocabulary and the algorithm that encodes with it, the way
// llama.cpp's llama_vocab does: special tokens written in the text are cut
// out first (control ones only when asked), the rest is encoded by kind.
// SPM pieces hold spaces as ' ' (GGUF's U+2581 is translated at load).
type Tokenizer struct {
	kind   Kind
	pieces []string
	scores []float32
	types  []int32
	lookup map[string]int
	bytes  [256]int // SPM: id of the <0xNN> piece, or -1
	byteOf []int16  // SPM: the byte a <0xNN> piece stands for, or -1
	bpe    *bpeModel
	// text is each token's bytes when decoded (BPE).
	text []string
	// specials are the tokens cut out of text before encoding, longest first.
	specials []special
	// maxPiece is the most bytes of text one token covers.
	maxPiece int
	// BOS, EOS and Unknown are special ids (-1 when absent).
	BOS, EOS, Unknown int
	// AddBOS and AddEOS: what "add special tokens" adds; AddSpacePrefix:
	// SPM's dummy-prefix space (before the text and after a special token).
	AddBOS, AddEOS, AddSpacePrefix bool
	// stripAfterBOS drops the leading space of the first piece after BOS
	// when decoding (SPM's dummy prefix), as run.c and SentencePiece do.
	stripAfterBOS bool
	// eog is the end-of-generation set.
	eog []int
	// fim: the fill-in-the-middle prefix, suffix and middle ids (-1: none).
	fim [3]int
	// sep is the separator ([SEP]; -1: none). WordPiece adds it last
	// with AddSpecial; AddSep says whether a reranker's pair puts it
	// between query and document (llama.cpp's add_sep).
	sep    int
	AddSep bool
	// wpm is WordPiece's normalisation (BERT's normalizer options).
	wpm wpmNorm
}

// New builds an SPM tokenizer from pieces, scores and types (types may be nil).
func New(pieces []string, scores []float32, types []int32, bos, eos, unk int) (*Tokenizer, error) {
	if len(pieces) == 0 || len(scores) != len(pieces) || (types != nil && len(types) != len(pieces)) {
		return nil, fmt.Errorf("%w: tokenizer has %d pieces, %d scores, %d types",
			ErrInvalid, len(pieces), len(scores), len(types))
	}
	t := &Tokenizer{fim: [3]int{-1, -1, -1}, sep: -1, pieces: pieces, scores: scores, types: types, lookup: make(map[string]int, len(pieces)),
		BOS: bos, EOS: eos, Unknown: unk, AddBOS: bos >= 0, AddSpacePrefix: true}
	if t.types == nil {
		t.types = make([]int32, len(pieces))
		for i, p := range pieces {
			t.types[i] = TokenNormal
			switch {
			case i == unk:
				t.types[i] = TokenUnknown
			case i == bos || i == eos:
				t.types[i] = TokenControl
			case len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>':
				t.types[i] = TokenByte
			}
		}
	}
	for i := range t.bytes {
		t.bytes[i] = -1
	}
	t.byteOf = make([]int16, len(pieces))
	t.maxPiece = 1
	for i, p := range pieces {
		t.byteOf[i] = -1
		if t.types[i] != TokenByte {
			t.maxPiece = max(t.maxPiece, len(p))
		}
		if t.types[i] == TokenByte {
			if b, ok := pieceByte(p); ok {
				t.bytes[b] = i
				t.byteOf[i] = int16(b)
			}
			continue
		}
		if _, dup := t.lookup[p]; !dup {
			t.lookup[p] = i
		}
	}
	for _, id := range []int{bos, eos, unk} {
		if id >= len(pieces) {
			return nil, fmt.Errorf("%w: special token id %d outside a vocab of %d", ErrInvalid, id, len(pieces))
		}
	}
	t.initSpecials(pieces)
	return t, nil
}

// LoadLlama2c reads a llama2.c tokenizer.bin with vocabSize pieces.
// Ids 0, 1, 2 are <unk>, BOS and EOS, as in llama2.c.
func LoadLlama2c(path string, vocabSize int) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	defer f.Close()
	tok, err := readLlama2cTokenizer(bufio.NewReader(f), vocabSize)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return tok, nil
}

func readLlama2cTokenizer(r io.Reader, vocabSize int) (*Tokenizer, error) {
	var maxLen int32
	if err := binary.Read(r, binary.LittleEndian, &maxLen); err != nil {
		return nil, invalid("tokenizer header: %v", err)
	}
	if maxLen <= 0 || maxLen > 1<<16 {
		return nil, invalid("tokenizer max token length %d", maxLen)
	}
	pieces := make([]string, vocabSize)
	scores := make([]float32, vocabSize)
	for i := range vocabSize {
		var hdr struct {
			Score float32
			Len   int32
		}
		if err := binary.Read(r, binary.LittleEndian, &hdr); err != nil {
			return nil, invalid("tokenizer piece %d of %d: %v", i, vocabSize, err)
		}
		if hdr.Len < 0 || hdr.Len > maxLen {
			return nil, invalid("tokenizer piece %d has length %d (max %d)", i, hdr.Len, maxLen)
		}
		buf := make([]byte, hdr.Len)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, invalid("tokenizer piece %d: %v", i, err)
		}
		pieces[i], scores[i] = string(buf), hdr.Score
	}
	t, err := New(pieces, scores, nil, 1, 2, 0)
	if err != nil {
		return nil, err
	}
	t.stripAfterBOS = true
	t.eog = []int{t.BOS, t.EOS} // run.c stops on BOS too
	return t, nil
}

// VocabSize returns the number of pieces.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// Piece returns the text of id as stored (spaces as ' ').
func (t *Tokenizer) Piece(id int) string { return t.pieces[id] }

// Pieces returns every piece, scores and types; the slices are shared.
func (t *Tokenizer) Pieces() ([]string, []float32, []int32) { return t.pieces, t.scores, t.types }

// IsControl reports whether id is a control or unknown token that decodes to nothing.
func (t *Tokenizer) IsControl(id int) bool {
	return id >= 0 && id < len(t.types) && (t.types[id] == TokenControl || t.types[id] == TokenUnknown)
}

// Options say how text is tokenized.
type Options struct {
	// AddSpecial adds what the vocabulary asks for: BOS if AddBOS, EOS if
	// AddEOS (llama.cpp's add_special).
	AddSpecial bool
	// ParseSpecial turns control tokens written in the text (<|im_start|>,
	// <|eot_id|>, <s>) into those tokens; otherwise they are plain text.
	// User-defined tokens are matched either way, as llama.cpp does.
	ParseSpecial bool
	// TextMark, when not 0, is a rune that marks text as text: written
	// inside a special token's text it keeps the token from being cut out
	// (chat message content, where a user must not forge a turn); it is
	// removed before encoding, and doubled it stands for itself
	// (RemoveMark).
	TextMark rune
}

// Encode tokenizes text; with bos it adds the vocabulary's special tokens.
// Special-token strings in text stay plain text.
func (t *Tokenizer) Encode(text string, bos bool) []int {
	toks, _ := t.Tokenize(context.Background(), text, Options{AddSpecial: bos})
	return toks
}

// EncodeContext is Encode that gives up with ctx.Err() once ctx ends.
func (t *Tokenizer) EncodeContext(ctx context.Context, text string, bos bool) ([]int, error) {
	return t.Tokenize(ctx, text, Options{AddSpecial: bos})
}

// Tokenize encodes text as llama.cpp's llama_tokenize does, giving up with
// ctx.Err() once ctx ends, so a long prompt never holds up shutdown. Its
// cost is O(n log n) in len(text) (plus one scan per special token).
func (t *Tokenizer) Tokenize(ctx context.Context, text string, o Options) ([]int, error) {
	toks := make([]int, 0, len(text)/3+2)
	if o.AddSpecial && t.AddBOS && t.BOS >= 0 {
		toks = append(toks, t.BOS)
	}
	prevSpecial := true // an SPM text gets its prefix space after a special token
	var err error
	for _, f := range t.partition(text, o.ParseSpecial) {
		if f.id >= 0 {
			toks = append(toks, f.id)
			prevSpecial = true
			continue
		}
		text := f.text
		if o.TextMark != 0 {
			text = RemoveMark(text, o.TextMark)
		}
		switch t.kind {
		case BPE:
			toks, err = t.bpe.encode(ctx, t, text, toks)
		case WPM:
			toks, err = t.encodeWPM(ctx, text, toks)
		default:
			toks, err = t.encodeSPM(ctx, text, t.AddSpacePrefix && prevSpecial, toks)
		}
		if err != nil {
			return nil, err
		}
		prevSpecial = false
	}
	if o.AddSpecial && t.AddEOS && t.EOS >= 0 {
		toks = append(toks, t.EOS)
	}
	if o.AddSpecial && t.kind == WPM && t.sep >= 0 {
		toks = append(toks, t.sep)
	}
	return toks, nil
}

// Sep is the separator token ([SEP]), or -1.
func (t *Tokenizer) Sep() int { return t.sep }

// Suffix is how many tokens AddSpecial appends after the text (EOS, or
// WordPiece's [SEP]): what a cut to a context keeps at the end.
func (t *Tokenizer) Suffix() int {
	n := 0
	if t.AddEOS && t.EOS >= 0 {
		n++
	}
	if t.kind == WPM && t.sep >= 0 {
		n++
	}
	return n
}

// encodeSPM appends the SPM tokens of one raw-text fragment.
func (t *Tokenizer) encodeSPM(ctx context.Context, text string, prefix bool, toks []int) ([]int, error) {
	// llama.cpp escapes spaces as U+2581 and looks pieces up that way, so
	// a U+2581 in the text is a space too.
	text = strings.ReplaceAll(text, "\u2581", " ")
	if prefix {
		text = " " + text
	}
	start := len(toks)
	return t.merge(ctx, t.symbols(toks, text), start)
}

// symbols appends text's symbols before merging: codepoints split the way
// run.c does (a lead byte and up to three continuation bytes); a codepoint
// missing from the vocab falls back to bytes.
func (t *Tokenizer) symbols(toks []int, text string) []int {
	for i := 0; i < len(text); {
		j := i + 1
		for j < len(text) && j-i < 4 && text[j]&0xC0 == 0x80 {
			j++
		}
		if id, ok := t.lookup[text[i:j]]; ok {
			toks = append(toks, id)
		} else {
			for k := i; k < j; k++ {
				toks = append(toks, t.byteToken(text[k]))
			}
		}
		i = j
	}
	return toks
}

// MinTokens is a lower bound on the tokens text encodes to (without BOS):
// no piece covers more than the longest piece's bytes. A prompt whose bound
// already exceeds the context is rejected before it is tokenized.
func (t *Tokenizer) MinTokens(text string) int {
	return (len(text) + t.maxPiece - 1) / t.maxPiece
}

// Covering is the start of text that holds the text of its first n tokens
// and then a margin (no piece covers more than the longest piece's bytes;
// the margin keeps the cut's effect on how the last words split away from
// them), cut at a character boundary: what to tokenize when only the first
// n tokens will be kept, so that a huge text costs no more than that.
func (t *Tokenizer) Covering(text string, n int) string {
	const margin = 4096
	if n <= 0 || len(text) <= n*t.maxPiece+margin {
		return text
	}
	cut := n*t.maxPiece + margin
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

func (t *Tokenizer) byteToken(b byte) int {
	if id := t.bytes[b]; id >= 0 {
		return id
	}
	return max(t.Unknown, 0)
}

// TokenBytes returns the bytes that id contributes to text following prev:
// control and unknown tokens give nothing, SPM byte pieces their byte, BPE
// tokens their bytes; after BOS a llama2.c vocabulary drops the first
// piece's leading space (the dummy prefix), as run.c prints.
func (t *Tokenizer) TokenBytes(prev, id int) []byte {
	if id < 0 || id >= len(t.pieces) || t.IsControl(id) {
		return nil
	}
	switch t.kind {
	case BPE:
		return []byte(t.text[id])
	case WPM: // the phantom space is a space; continuations join the word
		return []byte(strings.ReplaceAll(t.pieces[id], wpmSpace, " "))
	}
	p := t.pieces[id]
	if b := t.byteOf[id]; b >= 0 {
		return []byte{byte(b)}
	}
	if t.stripAfterBOS && prev == t.BOS && strings.HasPrefix(p, " ") {
		p = p[1:]
	}
	return []byte(p)
}

// Decode returns the text of ids following prev (use BOS for a fresh start).
func (t *Tokenizer) Decode(prev int, ids []int) string {
	var b []byte
	for _, id := range ids {
		b = append(b, t.TokenBytes(prev, id)...)
		prev = id
	}
	return string(b)
}

// PieceText returns id's text for display, as llama.cpp's
// llama-tokenize prints it: the bytes it decodes to, special tokens as
// written (valid UTF-8 or not).
func (t *Tokenizer) PieceText(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	if t.IsControl(id) {
		if t.kind == BPE {
			return t.text[id]
		}
		return t.pieces[id]
	}
	return string(t.TokenBytes(-1, id))
}

// Kind returns the vocabulary's algorithm.
func (t *Tokenizer) Kind() Kind { return t.kind }

// EOG returns the tokens that end generation: EOS, end-of-turn and the
// rest of the set llama.cpp derives (shared; do not modify).
func (t *Tokenizer) EOG() []int { return t.eog }

// IsEOG reports whether id ends generation.
func (t *Tokenizer) IsEOG(id int) bool { return slices.Contains(t.eog, id) }

// Type returns id's token type (TokenNormal, TokenControl, ...).
func (t *Tokenizer) Type(id int) int32 { return t.types[id] }
