//go:build !race

package chat

// raceEnabled: see race.go.
const raceEnabled = false
