package httpapi

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/storage"
)

// dataServer is a server whose search, appointment, agent and blob use
// cases answer at once.
func dataServer(t *testing.T) *Server {
	t.Helper()
	st := &StorageMock{
		UploadFunc: func(_ context.Context, in storage.UploadInput) (storage.Blob, error) {
			_, err := io.Copy(io.Discard, in.Body)
			return sample, err
		},
		MetadataFunc: func(context.Context, int64) (storage.Blob, error) { return sample, nil },
		DownloadFunc: func(context.Context, int64, *storage.ByteRange) (*storage.Download, error) {
			return download("\x89PNG-data", false, 0), nil
		},
		DeleteFunc: func(context.Context, int64) error { return nil },
	}
	in := &SchedulingMock{
		BookFunc: func(context.Context, ehr.BookingRequest) (ehr.Booked, error) {
			return ehr.Booked{Appointment: appt}, nil
		},
		AppointmentsFunc: func(context.Context, ehr.AppointmentFilter) (ehr.Page[ehr.Appointment], error) {
			return ehr.Page[ehr.Appointment]{Items: []ehr.Appointment{appt}, TotalCount: 1, Page: 1, Limit: 20}, nil
		},
		CancelFunc:     func(context.Context, string, string, string) (ehr.Appointment, error) { return appt, nil },
		RescheduleFunc: func(context.Context, ehr.RescheduleRequest) (ehr.Appointment, error) { return appt, nil },
		AgentsFunc: func(context.Context, ehr.AgentFilter) (ehr.Page[ehr.Agent], error) {
			return ehr.Page[ehr.Agent]{Items: []ehr.Agent{{ID: "dr-1"}}, TotalCount: 1, Page: 1, Limit: 20}, nil
		},
		AgentFunc: func(context.Context, string, string) (ehr.Agent, error) { return ehr.Agent{ID: "dr-1"}, nil },
		AvailabilityFunc: func(context.Context, ehr.AvailabilityRequest) (ehr.Availability, error) {
			return ehr.Availability{AgentID: "dr-1"}, nil
		},
	}
	se := &SearchMock{SearchFunc: func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) {
		return &ehr.SearchResult{Status: ehr.StatusSuccess, Page: 1, Limit: 20}, nil
	}}
	return New(Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Storage: st, Business: &BusinessMock{},
		Search: se, Scheduling: in, Registry: prometheus.NewRegistry(), Ready: func(context.Context) error { return nil },
		MaxUploadBytes: 1 << 20,
	})
}

// carriesData reports whether the answers of a path template carry
// patient or EHR data: search, appointments, agents and blobs.
func carriesData(path string) bool {
	for _, prefix := range []string{"/api/v1/search", "/appointment", "/agents", "/cloud-blob/"} {
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

func TestNoStore_AnswersWithPatientOrEHRDataAreNeverCached(t *testing.T) {
	s := dataServer(t)
	var checked int
	for _, op := range routedOperations(t, s) {
		if !carriesData(op.path) {
			continue
		}
		checked++
		path := pathVar.ReplaceAllString(op.path, "5")
		var header []string
		var body io.Reader
		switch op.path {
		case "/api/v1/search", "/appointment/customer", "/appointment/{id}/reschedule":
			body, header = strings.NewReader(`{}`), []string{"Content-Type", "application/json"}
		case "/cloud-blob/upload":
			var ct string
			body, ct = form(t, part{"originalFilename", "scan.png"}, part{"contentType", "image/png"}, part{"fileSize", "9"}, part{"file", "\x89PNG-data"})
			header = []string{"Content-Type", ct}
		}
		w := do(t, s, op.method, path, body, header...)
		want := "no-store"
		if strings.HasPrefix(op.path, "/cloud-blob/download/") {
			want = "private, no-store"
		}
		if w.Code >= 300 || w.Header().Get("Cache-Control") != want {
			t.Errorf("%s %s: %d, Cache-Control %q, want %q", op.method, op.path, w.Code, w.Header().Get("Cache-Control"), want)
		}
		// Refusals too: here, of a request without a token.
		w = do(t, s, op.method, path, nil, "Authorization", "")
		if w.Code != 401 || w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s without a token: %d, Cache-Control %q", op.method, op.path, w.Code, w.Header().Get("Cache-Control"))
		}
	}
	if checked < 12 {
		t.Fatalf("only %d operations carry data", checked)
	}
	// The business endpoints and the probes are not concerned.
	if w := do(t, s, "GET", "/healthz", nil); w.Header().Get("Cache-Control") != "" {
		t.Errorf("healthz: Cache-Control %q", w.Header().Get("Cache-Control"))
	}
}

func TestListings_PageAndLimitMustBeWholeNumbersInRange(t *testing.T) {
	s := allMocks(t) // a request that reaches the core is answered 500
	for _, path := range []string{"/appointment", "/agents"} {
		for query, mention := range map[string]string{
			"page=abc":                   "page must be a whole number",
			"page=1.5":                   "page must be a whole number",
			"limit=1e3":                  "limit must be a whole number",
			"page=99999999999999999999":  "page is out of range",
			"limit=-9223372036854775809": "limit is out of range",
		} {
			w := do(t, s, "GET", path+"?"+query, nil)
			if e := errEnvelope(t, w); w.Code != 400 || e.Code != "validation_failed" || !strings.Contains(e.Message, mention) {
				t.Errorf("%s?%s: %d %s %q", path, query, w.Code, e.Code, e.Message)
			}
		}
	}
	w := do(t, s, "GET", "/agents/dr-1/availability?duration=99999999999999999999", nil)
	if e := errEnvelope(t, w); w.Code != 400 || !strings.Contains(e.Message, "duration is out of range") {
		t.Errorf("availability: %d %q", w.Code, e.Message)
	}
	w = do(t, s, "POST", "/api/v1/search", strings.NewReader(`{"pagination":{"page":99999999999999999999}}`), "Content-Type", "application/json")
	if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_json" || !strings.Contains(e.Message, "pagination.page must be an integer") {
		t.Errorf("search: %d %s %q", w.Code, e.Code, e.Message)
	}
}

// An upload refused because the scanner stayed busy is 503
// scanner_unavailable with a Retry-After: the client learns when to try
// again.
func TestUpload_ABusyScannerIs503WithRetryAfter(t *testing.T) {
	busy := storage.ErrScannerUnavailable.WithMessage("The malware scanner is busy; nothing was stored, try again shortly")
	busy.RetryAfter = 1500 * time.Millisecond
	st := &StorageMock{UploadFunc: func(_ context.Context, in storage.UploadInput) (storage.Blob, error) {
		io.Copy(io.Discard, in.Body)
		return storage.Blob{}, busy
	}}
	body, ct := form(t, part{"originalFilename", "a.png"}, part{"contentType", "image/png"}, part{"fileSize", "9"}, part{"file", "\x89PNG-data"})
	w := do(t, newTestServer(t, st), "POST", "/cloud-blob/upload", body, "Content-Type", ct)
	if e := errEnvelope(t, w); w.Code != 503 || e.Code != "scanner_unavailable" || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("busy scanner: %d %s %q", w.Code, e.Code, w.Header().Get("Retry-After"))
	}
}
