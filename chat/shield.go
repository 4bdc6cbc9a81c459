package chat

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Marker is the rune that shields control-token text in a conversation's
// strings (Input.TextOnly): a noncharacter, which text exchanged between
// programs does not carry, and which no Jinja filter changes (it has no
// case and is not a space).
const Marker = '\uFDD0'

// shield marks the TextOnly texts inside a string; nil marks nothing.
type shield struct {
	byFirst map[byte][]string // texts by first byte, longest first
}

func newShield(texts []string) *shield {
	if len(texts) == 0 {
		return nil
	}
	sh := &shield{byFirst: map[byte][]string{}}
	for _, t := range texts {
		if t != "" {
			sh.byFirst[t[0]] = append(sh.byFirst[t[0]], t)
		}
	}
	for _, ts := range sh.byFirst {
		sort.SliceStable(ts, func(i, j int) bool { return len(ts[i]) > len(ts[j]) })
	}
	return sh
}

// apply returns s with Marker after every character but the last of each
// occurrence of a shielded text (so that no part of it matches either),
// and every Marker s already held doubled.
func (sh *shield) apply(s string) string {
	if sh == nil {
		return s
	}
	m := string(Marker)
	var b strings.Builder
	from := 0 // s[:from] is in b
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], m) {
			b.WriteString(s[from:i])
			b.WriteString(m + m)
			i += len(m)
			from = i
			continue
		}
		t := sh.match(s[i:])
		if t == "" {
			i++
			continue
		}
		b.WriteString(s[from:i])
		for j := 0; j < len(t); {
			_, n := utf8.DecodeRuneInString(t[j:])
			b.WriteString(t[j : j+n])
			if j += n; j < len(t) {
				b.WriteString(m)
			}
		}
		i += len(t)
		from = i
	}
	if from == 0 {
		return s
	}
	b.WriteString(s[from:])
	return b.String()
}

func (sh *shield) match(s string) string {
	for _, t := range sh.byFirst[s[0]] {
		if strings.HasPrefix(s, t) {
			return t
		}
	}
	return ""
}
