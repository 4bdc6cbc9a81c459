package config

import (
	"fmt"
	"os"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
)

// PrefixCacheConfig keeps the prefix cache warm ([prefix_cache]).
type PrefixCacheConfig struct {
	// Persist writes the prefix cache under state_dir on drain, sleep and
	// idle exit and reads it back at start and wake when the model, its
	// numerics and the KV layout match (default true with a state_dir).
	Persist *bool `toml:"persist"`
	// Pin are prompts prefilled into the default model's cache at start
	// and after a wake and never evicted (system prompts, few-shot
	// blocks); PinFile adds those of a JSONL file ({"prompt": TEXT} or
	// {"messages": [...]} per line, a chat prefix rendered without a
	// generation prompt) (restart).
	Pin     []string `toml:"pin"`
	PinFile string   `toml:"pin_file"`
	// PersistMaxBytes bounds each model's saved cache to its most recently
	// used blocks, so that the save at a stop fits systemd's stop timeout
	// (default 1 GiB; 0 is that default, -1 no bound).
	PersistMaxBytes int64 `toml:"persist_max_bytes"`
}

// PersistMax is PersistMaxBytes with its default (0: no bound).
func (pc PrefixCacheConfig) PersistMax() int64 {
	switch {
	case pc.PersistMaxBytes == 0:
		return 1 << 30
	case pc.PersistMaxBytes < 0:
		return 0
	}
	return pc.PersistMaxBytes
}

// check reads the pin file, so a start or reload fails on a bad one.
func (pc PrefixCacheConfig) check() error {
	if pc.PinFile == "" {
		return nil
	}
	if _, _, err := ReadPinFile(pc.PinFile); err != nil {
		return fmt.Errorf("prefix_cache.pin_file: %w", err)
	}
	return nil
}

// ReadPinFile reads a JSONL file of prompts and chat prefixes
// (prefix_cache.pin_file, batchctl warm --file).
func ReadPinFile(path string) ([]string, []wire.JSON, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	prompts, raw, err := client.ReadWarmFile(f, path)
	chats := make([]wire.JSON, len(raw))
	for i, c := range raw {
		chats[i] = wire.JSON(c)
	}
	return prompts, chats, err
}

// CacheDir is where prefix caches persist ("": they do not).
func (c *Config) CacheDir() string {
	if c.PrefixCache.Persist != nil && !*c.PrefixCache.Persist {
		return ""
	}
	return c.StateDir
}
