package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/business"
)

// readsFake answers the three read use cases with fixed data, without
// recording calls, so a benchmark measures only the HTTP edge.
type readsFake struct {
	*BusinessMock
	b  business.Business
	ls []business.Location
	hs []business.Hours
}

func (f readsFake) Business(context.Context, string) (business.Business, error) { return f.b, nil }
func (f readsFake) Locations(context.Context, string) ([]business.Location, error) {
	return f.ls, nil
}
func (f readsFake) Hours(context.Context, int64) ([]business.Hours, error) { return f.hs, nil }

// discardWriter is a ResponseWriter that keeps nothing but its header map.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// BenchmarkBusinessReads is the HTTP edge of the read endpoints of the
// business load run (test/bench): routing, auth, the envelope, JSON, the
// access log (JSON, discarded) and metrics, with the core answering at
// once. It is where the service's own cost per request can be seen
// without the database and the sockets.
func BenchmarkBusinessReads(b *testing.B) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	fake := readsFake{
		b: business.Business{ID: bizID, Name: "Bench Clinic", Email: "bench@clinic.example", OwnerSubject: "alice", CreatedAt: now, UpdatedAt: now},
		ls: []business.Location{{ID: 1, BusinessID: bizID, Name: "Main", Timezone: "America/Chicago", Phone: "+1 512 555 0100",
			Email: "m@clinic.example", Address: "1 Main St", City: "Austin", State: "TX", ZipCode: "78701", Country: "US", CreatedAt: now, UpdatedAt: now}},
	}
	for d := time.Monday; d <= time.Friday; d++ {
		fake.hs = append(fake.hs, business.Hours{ID: int64(d), LocationID: 1, Day: d, Start: "08:00", End: "17:00"})
	}
	s := New(Config{
		Log:      slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Auth:     tokens{},
		Storage:  &StorageMock{},
		Business: fake,
		Registry: prometheus.NewRegistry(),
		Ready:    func(context.Context) error { return nil },
	})
	for _, c := range []struct{ name, path string }{
		{"business", "/business/" + bizID},
		{"locations", "/business/locations/" + bizID},
		{"hours", "/business/location/1/operating-hours"},
		{"healthz", "/healthz"}, // the floor: middleware and routing only
	} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", c.path, nil)
			r.Header.Set("Authorization", "Bearer good-alice")
			r.Header.Set("user-type", "business")
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				w.status = 0
				s.ServeHTTP(w, r)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}
