package clamd

import (
	"context"
	"log/slog"
)

// Probe checks, for a readiness check, that clamd answers VERSION, and
// logs its version (engine, signature database and its date) when it
// changes: the operator learns it from the log (WithLog), not an
// anonymous caller from /readyz.
func (c *Client) Probe(ctx context.Context) error {
	version, err := c.Version(ctx)
	if err != nil {
		return err
	}
	c.versionMu.Lock()
	changed := version != c.lastVersion
	c.lastVersion = version
	c.versionMu.Unlock()
	if changed {
		c.log.LogAttrs(ctx, slog.LevelInfo, "malware scanner answers", slog.String("version", version))
	}
	return nil
}
