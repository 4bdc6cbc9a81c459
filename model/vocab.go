package model

import (
	"strings"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/tokenizer"
)

// LoadVocab reads only the tokenizer of a GGUF file: a model or a
// vocabulary-only file (llama.cpp's ggml-vocab-*.gguf). The file is mapped
// while its metadata is parsed and released after.
func LoadVocab(path string) (*tokenizer.Tokenizer, error) {
	tok, _, err := LoadVocabAndTemplate(path)
	return tok, err
}

// LoadVocabAndTemplate is LoadVocab that also returns the file's
// tokenizer.chat_template ("" when it has none).
func LoadVocabAndTemplate(path string) (*tokenizer.Tokenizer, string, error) {
	data, err := mmapFile(path)
	if err != nil {
		return nil, "", &FileError{Path: path, Err: err}
	}
	defer munmap(data)
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, "", &FileError{Path: path, Err: fromGGUF(err)}
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, "", &FileError{Path: path, Err: fromTokenizer(err)}
	}
	ct, _ := f.MetaString("tokenizer.chat_template")
	return tok, strings.Clone(ct), nil
}
