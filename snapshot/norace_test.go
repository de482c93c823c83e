//go:build !race

package snapshot

// raceEnabled is true in a test binary built with -race, whose detector
// changes allocation and heap figures.
const raceEnabled = false
