package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/storage"
)

// trail is an Auditor in memory; fail makes Record or Ready fail.
type trail struct {
	mu         sync.Mutex
	events     []audit.Event
	failRecord error
	failReady  error
	readies    int
}

func (a *trail) Record(_ context.Context, e audit.Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failRecord != nil {
		return a.failRecord
	}
	a.events = append(a.events, e)
	return nil
}

func (a *trail) Ready(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.readies++
	return a.failReady
}

func (a *trail) only(t *testing.T) audit.Event {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.events) != 1 {
		t.Fatalf("%d audit events, want 1: %+v", len(a.events), a.events)
	}
	return a.events[0]
}

func auditedServer(t *testing.T, a *trail, st *StorageMock, in *IntegrationMock, se *SearchMock) *Server {
	t.Helper()
	return New(Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Registry: prometheus.NewRegistry(),
		Storage: st, Integration: in, Search: se, Audit: a,
		Ready: func(context.Context) error { return nil }, MaxUploadBytes: 1 << 20,
	})
}

func TestAudit_RecordsOneEventPerRequest(t *testing.T) {
	st := &StorageMock{
		MetadataFunc: func(_ context.Context, id int64) (storage.Blob, error) {
			if id == 404 {
				return storage.Blob{}, storage.ErrBlobNotFound
			}
			return sample, nil
		},
		DownloadFunc: func(context.Context, int64, *storage.ByteRange) (*storage.Download, error) {
			return download("abcdefghi", false, 0), nil
		},
		DeleteFunc: func(context.Context, int64) error { return nil },
		UploadFunc: func(context.Context, storage.UploadInput) (storage.Blob, error) { return sample, nil },
	}
	in := &IntegrationMock{
		AppointmentsFunc: func(context.Context, ehr.AppointmentFilter) (ehr.Page[ehr.Appointment], error) {
			return ehr.Page[ehr.Appointment]{Items: []ehr.Appointment{{ID: "a-1"}, {ID: "a-2"}}, TotalCount: 2}, nil
		},
		BookFunc: func(context.Context, ehr.BookingRequest) (ehr.Booked, error) {
			return ehr.Booked{Appointment: ehr.Appointment{ID: "appt-9"}}, nil
		},
		CancelFunc: func(context.Context, string, string) (ehr.Appointment, error) {
			return ehr.Appointment{}, core.InsufficientScope("user/Appointment.u")
		},
		AgentsFunc: func(context.Context, ehr.AgentFilter) (ehr.Page[ehr.Agent], error) { return ehr.Page[ehr.Agent]{}, nil },
	}
	se := &SearchMock{SearchFunc: func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) {
		return &ehr.SearchResult{Status: ehr.StatusSuccess, Results: []ehr.Person{{ID: "p1"}, {ID: "p2"}, {ID: "p3"}}, TotalCount: 7,
			Sources: []string{"clinic-a"}, CacheHit: true}, nil
	}}
	body, ct := form(t, part{"originalFilename", "x.png"}, part{"contentType", "image/png"}, part{"fileSize", "9"}, part{"file", "\x89PNG....."})
	for _, tt := range []struct {
		name, method, path, token string
		body                      io.Reader
		header                    []string
		want                      audit.Event
	}{
		{"metadata", "GET", "/cloud-blob/metadata/5", "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.BlobMetadata, ResourceType: "blob", ResourceID: "5", Outcome: audit.Success, Status: 200}},
		{"not yours", "GET", "/cloud-blob/metadata/404", "good-bob", nil, nil,
			audit.Event{Actor: "bob", Action: audit.BlobMetadata, ResourceType: "blob", ResourceID: "404", Outcome: audit.Denied, Status: 404}},
		{"no token", "GET", "/cloud-blob/download/5", "", nil, nil,
			audit.Event{Action: audit.BlobDownload, ResourceType: "blob", ResourceID: "5", Outcome: audit.Denied, Status: 401}},
		{"download", "GET", "/cloud-blob/download/5", "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.BlobDownload, ResourceType: "blob", ResourceID: "5", Outcome: audit.Success, Status: 200}},
		{"a path id that is no id", "DELETE", "/cloud-blob/" + strings.Repeat("x", 200), "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.BlobDelete, ResourceType: "blob", Outcome: audit.Failed, Status: 400}},
		{"upload names the new blob", "POST", "/cloud-blob/upload", "good-alice", body, []string{"Content-Type", ct},
			audit.Event{Actor: "alice", Action: audit.BlobUpload, ResourceType: "blob", ResourceID: "5", Outcome: audit.Success, Status: 201}},
		{"search", "POST", "/api/v1/search", "good-alice", strings.NewReader(`{"query":"Zebulon Quixwell"}`), []string{"Content-Type", "application/json"},
			audit.Event{Actor: "alice", Action: audit.PatientSearch, ResourceType: "patient", Outcome: audit.Success, Status: 200,
				Detail: map[string]any{"results": 3, "sources": []string{"clinic-a"}, "cacheHit": true}}},
		{"list", "GET", "/appointment?patientEmail=zq@example.org", "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.AppointmentList, ResourceType: "appointment", Outcome: audit.Success, Status: 200,
				Detail: map[string]any{"results": 2}}},
		{"book", "POST", "/appointment/customer", "good-alice", strings.NewReader(`{"agentId":"dr-1"}`), []string{"Content-Type", "application/json"},
			audit.Event{Actor: "alice", Action: audit.AppointmentCreate, ResourceType: "appointment", ResourceID: "appt-9", Outcome: audit.Success, Status: 201}},
		{"cancel refused", "PUT", "/appointment/customer/appt-9/cancel", "good-eve", nil, nil,
			audit.Event{Actor: "eve", Action: audit.AppointmentCancel, ResourceType: "appointment", ResourceID: "appt-9", Outcome: audit.Denied, Status: 403}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &trail{}
			s := auditedServer(t, a, st, in, se)
			header := append([]string{"Authorization", "Bearer " + tt.token}, tt.header...)
			if tt.token == "" {
				header[1] = ""
			}
			w := do(t, s, tt.method, tt.path, tt.body, header...)
			e := a.only(t)
			if w.Code != tt.want.Status || e.RequestID == "" || e.RequestID != w.Header().Get("X-Request-Id") || e.At.IsZero() {
				t.Fatalf("status %d, event %+v", w.Code, e)
			}
			if e.Actor != tt.want.Actor || e.Action != tt.want.Action || e.ResourceType != tt.want.ResourceType || e.ResourceID != tt.want.ResourceID ||
				e.Outcome != tt.want.Outcome || e.Status != tt.want.Status || !sameDetail(e.Detail, tt.want.Detail) {
				t.Fatalf("event %+v\nwant  %+v", e, tt.want)
			}
		})
	}
	// Agents are not patient data: not audited.
	a := &trail{}
	if w := do(t, auditedServer(t, a, st, in, se), "GET", "/agents", nil); w.Code != 200 || len(a.events) != 0 {
		t.Fatalf("agents: %d, %d events", w.Code, len(a.events))
	}
}

// sameDetail compares details as JSON, as the trail stores them.
func sameDetail(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestAudit_AnAnswerWhoseEventCannotBeCommittedIsNotSent(t *testing.T) {
	st := &StorageMock{DownloadFunc: func(context.Context, int64, *storage.ByteRange) (*storage.Download, error) {
		return download("secret fi", false, 0), nil
	}}
	se := &SearchMock{SearchFunc: func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) {
		return &ehr.SearchResult{Status: ehr.StatusSuccess, Results: []ehr.Person{{ID: "p1", Name: ehr.HumanName{Family: "Quixwell"}}}}, nil
	}}
	a := &trail{failRecord: errors.New("permission denied for table audit_events")}
	s := auditedServer(t, a, st, nil, se)
	for _, tt := range []struct{ method, path, body, secret string }{
		{"GET", "/cloud-blob/download/5", "", "secret fi"},
		{"POST", "/api/v1/search", `{"query":"x"}`, "Quixwell"},
	} {
		var body io.Reader
		if tt.body != "" {
			body = strings.NewReader(tt.body)
		}
		w := do(t, s, tt.method, tt.path, body, "Content-Type", "application/json")
		if w.Code != http.StatusServiceUnavailable || errEnvelope(t, w).Code != "audit_unavailable" || strings.Contains(w.Body.String(), tt.secret) {
			t.Fatalf("%s: %d %s", tt.path, w.Code, w.Body)
		}
		for _, h := range []string{"Content-Disposition", "Etag", "Content-Length", "Last-Modified"} {
			if w.Header().Get(h) != "" {
				t.Errorf("%s: the refused answer keeps %s", tt.path, h)
			}
		}
		if w.Header().Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", tt.path)
		}
	}
}

func TestAudit_AChangeIsNotMadeWhenTheTrailCannotBeWritten(t *testing.T) {
	st := &StorageMock{
		UploadFunc:   func(context.Context, storage.UploadInput) (storage.Blob, error) { return sample, nil },
		DeleteFunc:   func(context.Context, int64) error { return nil },
		MetadataFunc: func(context.Context, int64) (storage.Blob, error) { return sample, nil },
	}
	in := &IntegrationMock{
		BookFunc:       func(context.Context, ehr.BookingRequest) (ehr.Booked, error) { return ehr.Booked{}, nil },
		CancelFunc:     func(context.Context, string, string) (ehr.Appointment, error) { return ehr.Appointment{}, nil },
		RescheduleFunc: func(context.Context, string, string, string) (ehr.Appointment, error) { return ehr.Appointment{}, nil },
	}
	a := &trail{failReady: errors.New("database down")}
	s := auditedServer(t, a, st, in, nil)
	body, ct := form(t, part{"originalFilename", "x.png"}, part{"contentType", "image/png"}, part{"fileSize", "9"}, part{"file", "\x89PNG....."})
	for _, tt := range []struct {
		method, path string
		body         io.Reader
		ct           string
	}{
		{"POST", "/cloud-blob/upload", body, ct},
		{"DELETE", "/cloud-blob/5", nil, ""},
		{"POST", "/appointment/customer", strings.NewReader(`{}`), "application/json"},
		{"PUT", "/appointment/customer/a-1/cancel", nil, ""},
		{"POST", "/appointment/a-1/reschedule", strings.NewReader(`{}`), "application/json"},
	} {
		w := do(t, s, tt.method, tt.path, tt.body, "Content-Type", tt.ct)
		if w.Code != http.StatusServiceUnavailable || errEnvelope(t, w).Code != "audit_unavailable" {
			t.Fatalf("%s %s: %d %s", tt.method, tt.path, w.Code, w.Body)
		}
	}
	if n := len(st.UploadCalls()) + len(st.DeleteCalls()) + len(in.BookCalls()) + len(in.CancelCalls()) + len(in.RescheduleCalls()); n != 0 {
		t.Fatalf("%d changes were made without an audit trail", n)
	}
	// Reads are not asked in advance: their answer waits for the event.
	a.failReady = nil
	before := a.readies
	if w := do(t, s, "GET", "/cloud-blob/metadata/5", nil); w.Code != 200 || a.readies != before {
		t.Fatalf("metadata: %d, %d readiness checks", w.Code, a.readies-before)
	}
}
