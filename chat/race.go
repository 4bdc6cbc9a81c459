//go:build race

package chat

// raceEnabled: the race detector's shadow memory takes several times the
// program's own, so a worker's address-space limit grows with it.
const raceEnabled = true
