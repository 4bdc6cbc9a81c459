package engine

import "strings"

// stopMatcher finds stop strings across token boundaries. Text that could be
// the start of a stop string is held back until it is known not to be one,
// so a stop string is never emitted, even in part.
type stopMatcher struct {
	stops   []string
	held    string
	matched string // the stop string that ended the text
}

// feed adds a text delta and returns what may be emitted now; stopped is true
// when a stop string completed, in which case out is the text before it.
func (m *stopMatcher) feed(delta string) (out string, stopped bool) {
	if len(m.stops) == 0 {
		return delta, false
	}
	buf := m.held + delta
	if buf == "" {
		return "", false
	}
	cut := -1
	for _, s := range m.stops {
		if i := strings.Index(buf, s); i >= 0 && (cut < 0 || i < cut) {
			cut, m.matched = i, s
		}
	}
	if cut >= 0 {
		m.held = ""
		return buf[:cut], true
	}
	keep := 0
	last := buf[len(buf)-1:]
	for _, s := range m.stops {
		for n := min(len(s)-1, len(buf)); n > keep; n-- {
			// The last byte first: most candidate lengths fail there.
			if s[n-1] == last[0] && strings.HasSuffix(buf, s[:n]) {
				keep = n
				break
			}
		}
	}
	m.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush returns the held text at the end of a request that did not stop on a string.
func (m *stopMatcher) flush() string {
	out := m.held
	m.held = ""
	return out
}
