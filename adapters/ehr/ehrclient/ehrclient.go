// Package ehrclient holds what every EHR client shares whatever its
// transport (HTTP for ehrhttp, a WebSocket link for wsbot): the circuit
// breaker, with the states its metric reports, the duration attribute
// of log lines, and the client span of a call (trace.go).
package ehrclient

import (
	"log/slog"
	"time"
)

// DurationMS is the duration_ms attribute of a log line: d in
// milliseconds, a number with microsecond precision. Every log line that
// tells a duration uses it, so the unit is in the name.
func DurationMS(d time.Duration) slog.Attr {
	return slog.Float64("duration_ms", float64(d.Microseconds())/1000)
}
