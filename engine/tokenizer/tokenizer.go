package tokenizer

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
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

// Tokenizer is a SentencePiece BPE vocabulary encoded the way llama2.c's
// run.c and llama.cpp's SPM tokenizer do it: BOS, a dummy-prefix space,
// codepoints with byte fallback, then greedy merges of the best-scoring
// adjacent pair (leftmost on a tie). Pieces hold spaces as ' ' (GGUF's U+2581
// is translated at load).
type Tokenizer struct {
	pieces []string
	scores []float32
	types  []int32
	lookup map[string]int
	bytes  [256]int // id of the <0xNN> piece, or -1
	byteOf []int16  // the byte a <0xNN> piece stands for, or -1
	// maxPiece is the longest piece in bytes (a byte piece counts one).
	maxPiece int
	// BOS, EOS and Unknown are special ids (-1 when absent).
	BOS, EOS, Unknown int
}

// NewTokenizer builds a tokenizer from pieces, scores and types (types may be nil).
func New(pieces []string, scores []float32, types []int32, bos, eos, unk int) (*Tokenizer, error) {
	if len(pieces) == 0 || len(scores) != len(pieces) || (types != nil && len(types) != len(pieces)) {
		return nil, fmt.Errorf("%w: tokenizer has %d pieces, %d scores, %d types",
			ErrInvalid, len(pieces), len(scores), len(types))
	}
	t := &Tokenizer{pieces: pieces, scores: scores, types: types, lookup: make(map[string]int, len(pieces)),
		BOS: bos, EOS: eos, Unknown: unk}
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
			var b byte
			if _, err := fmt.Sscanf(p, "<0x%02X>", &b); err == nil {
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
	return t, nil
}

// LoadLlama2cTokenizer reads a llama2.c tokenizer.bin with vocabSize pieces.
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
	return New(pieces, scores, nil, 1, 2, 0)
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

// Encode tokenizes text; with bos it starts with BOS. A non-empty text gets a
// dummy-prefix space.
func (t *Tokenizer) Encode(text string, bos bool) []int {
	toks, _ := t.EncodeContext(context.Background(), text, bos)
	return toks
}

// EncodeContext is Encode that gives up with ctx.Err() once ctx ends, so a
// long prompt never holds up shutdown. Its cost is O(n log n) in len(text).
func (t *Tokenizer) EncodeContext(ctx context.Context, text string, bos bool) ([]int, error) {
	toks := make([]int, 0, len(text)+2)
	if bos && t.BOS >= 0 {
		toks = append(toks, t.BOS)
	}
	if text == "" {
		return toks, nil
	}
	start := len(toks)
	return t.merge(ctx, t.symbols(toks, text), start)
}

// symbols appends text's symbols before merging: the dummy-prefix space,
// then codepoints split the way run.c does (a lead byte and up to three
// continuation bytes); a codepoint missing from the vocab falls back to bytes.
func (t *Tokenizer) symbols(toks []int, text string) []int {
	if id, ok := t.lookup[" "]; ok {
		toks = append(toks, id)
	} else {
		text = " " + text
	}
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

func (t *Tokenizer) byteToken(b byte) int {
	if id := t.bytes[b]; id >= 0 {
		return id
	}
	return max(t.Unknown, 0)
}

// TokenBytes returns the bytes that id contributes to text following prev:
// control tokens give nothing, byte pieces their byte, and the first piece
// after BOS loses its leading space (the dummy prefix).
func (t *Tokenizer) TokenBytes(prev, id int) []byte {
	if id < 0 || id >= len(t.pieces) || t.IsControl(id) {
		return nil
	}
	p := t.pieces[id]
	if b := t.byteOf[id]; b >= 0 {
		return []byte{byte(b)}
	}
	if prev == t.BOS && strings.HasPrefix(p, " ") {
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
