package app

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/clamd"
	"github.com/carebridge/carebridge/adapters/httpapi"
	"github.com/carebridge/carebridge/core/storage"
)

// scanner is the malware scanner as the app wires it: the storage option
// that scans every upload, and what /readyz shows of it.
type scanner struct {
	options []storage.Option
	state   func(context.Context) httpapi.ScannerState // nil: no scanner
	load    func() httpapi.ScannerLoad
}

// buildScanner connects the malware scanner of cfg (nil: uploads are not
// scanned).
func buildScanner(cfg *clamd.Config, reg prometheus.Registerer, log *slog.Logger) (scanner, error) {
	if cfg == nil {
		return scanner{}, nil
	}
	c, err := clamd.New(*cfg, clamd.WithLog(log))
	if err != nil {
		return scanner{}, err
	}
	c.RegisterStats(reg)
	return scanner{
		options: []storage.Option{storage.WithScanner(clamd.Metered(c, reg))},
		state:   func(ctx context.Context) httpapi.ScannerState { return httpapi.ScannerState{Err: c.Probe(ctx)} },
		load: func() httpapi.ScannerLoad {
			st := c.Stats()
			return httpapi.ScannerLoad{InUse: st.InUse, Max: st.Max, Waiting: st.Waiting}
		},
	}, nil
}
