//go:build race

package test

// raceEnabled tells whether the tests are built with the race detector, so
// the CLI they build can be too (and reuse the packages already compiled).
const raceEnabled = true
