package client

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ReadWarmFile reads a warm file (JSONL: {"prompt": TEXT} or
// {"messages": [...]} per line, blank lines skipped), the prompts and
// chat prefixes Warm takes; name is for error messages.
func ReadWarmFile(r io.Reader, name string) (prompts []string, chats []json.RawMessage, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e struct {
			Prompt   string          `json:"prompt"`
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || (e.Prompt == "") == (len(e.Messages) == 0) {
			return nil, nil, fmt.Errorf("%s:%d: want {\"prompt\": TEXT} or {\"messages\": [...]} (%v)", name, n, err)
		}
		if e.Prompt != "" {
			prompts = append(prompts, e.Prompt)
		} else {
			chats = append(chats, e.Messages)
		}
	}
	return prompts, chats, sc.Err()
}
