package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/storage"
)

// trail is an Auditor in memory; failRecord fails Record for the events
// it returns an error for, failReady fails Ready.
type trail struct {
	mu              sync.Mutex
	events          []audit.Event
	failRecord      func(audit.Event) error
	failReady       error
	readies         int
	unauthenticated []refusal
}

// refusal is one call of Unauthenticated.
type refusal struct {
	addr string
	e    audit.Event
}

func (a *trail) Record(_ context.Context, e audit.Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failRecord != nil {
		if err := a.failRecord(e); err != nil {
			return err
		}
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

func (a *trail) Unauthenticated(addr string, e audit.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.unauthenticated = append(a.unauthenticated, refusal{addr, e})
}

// commitWithChange is what the blob repository does in its transaction:
// it appends the request's pending event, naming id.
func (a *trail) commitWithChange(ctx context.Context, id string) {
	p := audit.PendingFrom(ctx)
	if p == nil {
		return
	}
	e := p.Event
	e.ResourceID = id
	a.mu.Lock()
	a.events = append(a.events, e)
	a.mu.Unlock()
	p.MarkCommitted()
}

// failing fails Record for every event.
func failing(err error) func(audit.Event) error { return func(audit.Event) error { return err } }

// recorded returns the events so far.
func (a *trail) recorded() []audit.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.events)
}

func (a *trail) only(t *testing.T) audit.Event {
	t.Helper()
	events := a.recorded()
	if len(events) != 1 {
		t.Fatalf("%d audit events, want 1: %+v", len(events), events)
	}
	return events[0]
}

func auditedServer(t *testing.T, a *trail, st *StorageMock, in *SchedulingMock, se *SearchMock) *Server {
	t.Helper()
	return New(Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Registry: prometheus.NewRegistry(),
		Storage: st, Scheduling: in, Search: se, Audit: a,
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
	in := &SchedulingMock{
		AppointmentsFunc: func(context.Context, ehr.AppointmentFilter) (ehr.Page[ehr.Appointment], error) {
			return ehr.Page[ehr.Appointment]{Items: []ehr.Appointment{{ID: "a-1"}, {ID: "a-2"}}, TotalCount: 2}, nil
		},
		BookFunc: func(context.Context, ehr.BookingRequest) (ehr.Booked, error) {
			return ehr.Booked{Appointment: ehr.Appointment{ID: "appt-9"}}, nil
		},
		CancelFunc: func(context.Context, string, string, string) (ehr.Appointment, error) {
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
		started                   bool // an EHR change: a started event comes first
	}{
		{"metadata", "GET", "/cloud-blob/metadata/5", "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.BlobMetadata, ResourceType: "blob", ResourceID: "5", Outcome: audit.Success, Status: 200}, false},
		{"the id as parsed", "GET", "/cloud-blob/metadata/0005", "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.BlobMetadata, ResourceType: "blob", ResourceID: "5", Outcome: audit.Success, Status: 200}, false},
		{"not yours", "GET", "/cloud-blob/metadata/404", "good-bob", nil, nil,
			audit.Event{Actor: "bob", Action: audit.BlobMetadata, ResourceType: "blob", ResourceID: "404", Outcome: audit.Denied, Status: 404}, false},
		{"download", "GET", "/cloud-blob/download/5", "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.BlobDownload, ResourceType: "blob", ResourceID: "5", Outcome: audit.Success, Status: 200}, false},
		{"a path id that is no id", "DELETE", "/cloud-blob/" + strings.Repeat("x", 200), "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.BlobDelete, ResourceType: "blob", Outcome: audit.Failed, Status: 400}, false},
		{"a blob id that is text", "GET", "/cloud-blob/download/5abc", "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.BlobDownload, ResourceType: "blob", Outcome: audit.Failed, Status: 400}, false},
		{"upload names the new blob", "POST", "/cloud-blob/upload", "good-alice", body, []string{"Content-Type", ct},
			audit.Event{Actor: "alice", Action: audit.BlobUpload, ResourceType: "blob", ResourceID: "5", Outcome: audit.Success, Status: 201}, false},
		{"search", "POST", "/api/v1/search", "good-alice", strings.NewReader(`{"query":"Zebulon Quixwell"}`), []string{"Content-Type", "application/json"},
			audit.Event{Actor: "alice", Action: audit.PatientSearch, ResourceType: "patient", Outcome: audit.Success, Status: 200,
				Detail: map[string]any{"results": 3, "sources": []string{"clinic-a"}, "cacheHit": true}}, false},
		{"list", "GET", "/appointment?patientEmail=zq@example.org", "good-alice", nil, nil,
			audit.Event{Actor: "alice", Action: audit.AppointmentList, ResourceType: "appointment", Outcome: audit.Success, Status: 200,
				Detail: map[string]any{"results": 2}}, false},
		{"book", "POST", "/appointment/customer", "good-alice", strings.NewReader(`{"agentId":"dr-1"}`), []string{"Content-Type", "application/json"},
			audit.Event{Actor: "alice", Action: audit.AppointmentCreate, ResourceType: "appointment", ResourceID: "appt-9", Outcome: audit.Success, Status: 201}, true},
		{"cancel refused", "PUT", "/appointment/customer/appt-9/cancel", "good-eve", nil, nil,
			audit.Event{Actor: "eve", Action: audit.AppointmentCancel, ResourceType: "appointment", ResourceID: "appt-9", Outcome: audit.Denied, Status: 403}, true},
		{"an appointment id of no appointment's form", "POST", "/appointment/Zebulon%3Cb%3E/reschedule", "good-alice", strings.NewReader(`{}`), []string{"Content-Type", "application/json"},
			audit.Event{Actor: "alice", Action: audit.AppointmentReschedule, ResourceType: "appointment", Outcome: audit.Denied, Status: 404}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &trail{}
			s := auditedServer(t, a, st, in, se)
			header := append([]string{"Authorization", "Bearer " + tt.token}, tt.header...)
			w := do(t, s, tt.method, tt.path, tt.body, header...)
			events := a.recorded()
			if n := map[bool]int{false: 1, true: 2}[tt.started]; len(events) != n {
				t.Fatalf("%d events, want %d: %+v", len(events), n, events)
			}
			e := events[len(events)-1]
			if w.Code != tt.want.Status || e.RequestID == "" || e.RequestID != w.Header().Get("X-Request-Id") || e.At.IsZero() {
				t.Fatalf("status %d, event %+v", w.Code, e)
			}
			if e.Actor != tt.want.Actor || e.Action != tt.want.Action || e.ResourceType != tt.want.ResourceType || e.ResourceID != tt.want.ResourceID ||
				e.Outcome != tt.want.Outcome || e.Status != tt.want.Status || !sameDetail(e.Detail, tt.want.Detail) {
				t.Fatalf("event %+v\nwant  %+v", e, tt.want)
			}
			if tt.started {
				s := events[0]
				if s.Outcome != audit.Started || s.Status != 0 || s.RequestID != e.RequestID || s.Actor != e.Actor || s.Action != e.Action ||
					s.ResourceType != e.ResourceType || s.At.After(e.At) {
					t.Fatalf("started event %+v before %+v", s, e)
				}
			}
		})
	}
	// Agents are not patient data: not audited.
	a := &trail{}
	if w := do(t, auditedServer(t, a, st, in, se), "GET", "/agents", nil); w.Code != 200 || len(a.recorded()) != 0 {
		t.Fatalf("agents: %d, %d events", w.Code, len(a.recorded()))
	}
	if n := len(in.RescheduleCalls()); n != 0 {
		t.Fatalf("an id of no appointment's form reached the EHR %d times", n)
	}
}

func TestAudit_UnauthenticatedRequestsAreCountedWithoutWaitingForTheTrail(t *testing.T) {
	// The trail is down: a request with a token would be refused with 503,
	// one without is answered 401 at once and only counted.
	a := &trail{failRecord: failing(errors.New("database down")), failReady: errors.New("database down")}
	st := &StorageMock{}
	s := auditedServer(t, a, st, &SchedulingMock{}, &SearchMock{})
	for _, tt := range []struct {
		method, path, token string
		action              audit.Action
		resourceType        string
	}{
		{"GET", "/cloud-blob/download/5", "", audit.BlobDownload, "blob"},
		{"DELETE", "/cloud-blob/5", "expired", audit.BlobDelete, "blob"},
		{"POST", "/api/v1/search", "", audit.PatientSearch, "patient"},
		{"PUT", "/appointment/customer/a-1/cancel", "forged", audit.AppointmentCancel, "appointment"},
	} {
		before := len(a.unauthenticated)
		w := do(t, s, tt.method, tt.path, nil, "Authorization", map[bool]string{true: "", false: "Bearer " + tt.token}[tt.token == ""])
		if w.Code != http.StatusUnauthorized || errEnvelope(t, w).Code == "audit_unavailable" {
			t.Fatalf("%s %s: %d %s", tt.method, tt.path, w.Code, w.Body)
		}
		if len(a.unauthenticated) != before+1 {
			t.Fatalf("%s %s: %d refusals counted", tt.method, tt.path, len(a.unauthenticated)-before)
		}
		r := a.unauthenticated[before]
		if r.addr != "192.0.2.1" || r.e.Action != tt.action || r.e.ResourceType != tt.resourceType || r.e.Status != 401 ||
			r.e.Outcome != audit.Denied || r.e.Actor != "" || r.e.ResourceID != "" || r.e.RequestID != w.Header().Get("X-Request-Id") || r.e.At.IsZero() {
			t.Fatalf("%s %s: counted %+v", tt.method, tt.path, r)
		}
	}
	if len(a.recorded()) != 0 || a.readies != 0 || len(st.DownloadCalls())+len(st.DeleteCalls()) != 0 {
		t.Fatalf("the trail was asked: %d events, %d readiness checks", len(a.recorded()), a.readies)
	}
	// Routes that are not audited refuse as before, uncounted.
	if w := do(t, s, "GET", "/agents", nil, "Authorization", ""); w.Code != 401 || len(a.unauthenticated) != 4 {
		t.Fatalf("agents: %d, %d counted", w.Code, len(a.unauthenticated))
	}
}

func TestAudit_AFileChangeCommitsItsEventWithTheChangeAndOnlyThere(t *testing.T) {
	a := &trail{}
	st := &StorageMock{
		UploadFunc: func(ctx context.Context, in storage.UploadInput) (storage.Blob, error) {
			io.Copy(io.Discard, in.Body)
			a.commitWithChange(ctx, "5")
			return sample, nil
		},
		MetadataFunc: func(context.Context, int64) (storage.Blob, error) { return sample, nil },
		DeleteFunc: func(ctx context.Context, id int64) error {
			a.commitWithChange(ctx, fmt.Sprint(id))
			return nil
		},
	}
	s := auditedServer(t, a, st, nil, nil)
	body, ct := form(t, part{"originalFilename", "x.png"}, part{"contentType", "image/png"}, part{"fileSize", "9"}, part{"file", "\x89PNG....."})
	up := do(t, s, "POST", "/cloud-blob/upload", body, "Content-Type", ct)
	del := do(t, s, "DELETE", "/cloud-blob/5", nil)
	events := a.recorded()
	if up.Code != 201 || del.Code != 200 || len(events) != 2 {
		t.Fatalf("upload %d, delete %d, %d events: %+v", up.Code, del.Code, len(events), events)
	}
	for i, want := range []struct {
		w      *httptest.ResponseRecorder
		action audit.Action
	}{{up, audit.BlobUpload}, {del, audit.BlobDelete}} {
		e := events[i]
		if e.Action != want.action || e.Status != want.w.Code || e.Outcome != audit.Success || e.Actor != "alice" ||
			e.ResourceID != "5" || e.RequestID != want.w.Header().Get("X-Request-Id") {
			t.Errorf("event %+v for %s answered %d", e, want.action, want.w.Code)
		}
	}
	// The change's transaction fails for its event: the answer is 503 and
	// the final event says so (when the trail takes it).
	st.DeleteFunc = func(context.Context, int64) error {
		return fmt.Errorf("delete blob 5: %w", audit.ErrUnavailable.Wrap(errors.New("refused by a trigger")))
	}
	w := do(t, s, "DELETE", "/cloud-blob/5", nil)
	if w.Code != 503 || errEnvelope(t, w).Code != "audit_unavailable" {
		t.Fatalf("delete refused by the trail: %d %s", w.Code, w.Body)
	}
	if e := a.recorded()[2]; e.Status != 503 || e.Outcome != audit.Failed || e.Action != audit.BlobDelete {
		t.Fatalf("final event %+v", e)
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
	a := &trail{failRecord: failing(errors.New("permission denied for table audit_events"))}
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
	in := &SchedulingMock{
		BookFunc:   func(context.Context, ehr.BookingRequest) (ehr.Booked, error) { return ehr.Booked{}, nil },
		CancelFunc: func(context.Context, string, string, string) (ehr.Appointment, error) { return ehr.Appointment{}, nil },
		RescheduleFunc: func(context.Context, ehr.RescheduleRequest) (ehr.Appointment, error) {
			return ehr.Appointment{}, nil
		},
	}
	// A file change asks whether the trail is writable before it reads the
	// file; an EHR change needs its started event committed.
	a := &trail{failReady: errors.New("database down"), failRecord: func(e audit.Event) error {
		if e.Outcome == audit.Started {
			return errors.New("permission denied for table audit_events")
		}
		return nil
	}}
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
	// Each refused request still has its one final event.
	for _, e := range a.recorded() {
		if e.Status != 503 || e.Outcome != audit.Failed {
			t.Errorf("event %+v", e)
		}
	}
	if n := len(a.recorded()); n != 5 {
		t.Errorf("%d final events, want 5", n)
	}
	// Reads are not asked in advance: their answer waits for the event.
	a.failReady = nil
	before := a.readies
	if w := do(t, s, "GET", "/cloud-blob/metadata/5", nil); w.Code != 200 || a.readies != before {
		t.Fatalf("metadata: %d, %d readiness checks", w.Code, a.readies-before)
	}
}

func TestAudit_TheStartedEventIsCommittedBeforeTheEHRIsCalled(t *testing.T) {
	a := &trail{}
	var seen [][]audit.Event // the trail when the EHR was called
	in := &SchedulingMock{
		BookFunc: func(context.Context, ehr.BookingRequest) (ehr.Booked, error) {
			seen = append(seen, a.recorded())
			return ehr.Booked{Appointment: ehr.Appointment{ID: "appt-1"}}, nil
		},
		CancelFunc: func(context.Context, string, string, string) (ehr.Appointment, error) {
			seen = append(seen, a.recorded())
			return ehr.Appointment{}, ehr.ErrAlreadyCancelled
		},
		RescheduleFunc: func(context.Context, ehr.RescheduleRequest) (ehr.Appointment, error) {
			seen = append(seen, a.recorded())
			return ehr.Appointment{}, &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "The EHR did not answer in time"}
		},
	}
	s := auditedServer(t, a, nil, in, nil)
	for i, tt := range []struct {
		method, path, body string
		action             audit.Action
		resourceID         string
		status             int
	}{
		{"POST", "/appointment/customer", `{}`, audit.AppointmentCreate, "", 201},
		{"PUT", "/appointment/customer/appt-1/cancel", ``, audit.AppointmentCancel, "appt-1", 409},
		{"POST", "/appointment/appt-1/reschedule", `{}`, audit.AppointmentReschedule, "appt-1", 504},
	} {
		before := len(a.recorded())
		w := do(t, s, tt.method, tt.path, strings.NewReader(tt.body), "Content-Type", "application/json")
		events := a.recorded()[before:]
		if w.Code != tt.status || len(events) != 2 || len(seen) != i+1 {
			t.Fatalf("%s: %d, events %+v", tt.path, w.Code, events)
		}
		started, final := events[0], events[1]
		if last := seen[i][len(seen[i])-1]; last.Outcome != audit.Started || last.RequestID != w.Header().Get("X-Request-Id") {
			t.Fatalf("%s: the EHR was called with %+v last in the trail", tt.path, last)
		}
		if started.Outcome != audit.Started || started.Status != 0 || started.Action != tt.action || started.ResourceID != tt.resourceID ||
			final.Status != tt.status || final.Action != tt.action || final.RequestID != started.RequestID {
			t.Fatalf("%s: started %+v, final %+v", tt.path, started, final)
		}
	}
	// A request refused before the EHR is called has no started event.
	w := do(t, s, "POST", "/appointment/customer", strings.NewReader(`{"agentId":`), "Content-Type", "application/json")
	if e := a.recorded()[len(a.recorded())-1]; w.Code != 400 || e.Status != 400 || len(a.recorded()) != 7 {
		t.Fatalf("malformed booking: %d, %d events, last %+v", w.Code, len(a.recorded()), e)
	}
}

// A blob request's event names the blob's business, as the storage core
// reads it with the blob; a blob of no business, or one the caller may not
// see, names none.
func TestAudit_BlobEventsNameTheBlobsBusiness(t *testing.T) {
	const business = "3d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a"
	ofBusiness := sample
	ofBusiness.BusinessLocationID, ofBusiness.BusinessID = "12", business
	st := &StorageMock{
		MetadataFunc: func(_ context.Context, id int64) (storage.Blob, error) {
			switch id {
			case 1:
				return ofBusiness, nil
			case 2:
				return sample, nil
			}
			return storage.Blob{}, storage.ErrBlobNotFound
		},
		DownloadFunc: func(context.Context, int64, *storage.ByteRange) (*storage.Download, error) {
			d := download("abcdefghi", false, 0)
			d.Blob.BusinessID = business
			return d, nil
		},
	}
	for _, tt := range []struct {
		name, path, want string
	}{
		{"metadata of a blob of a business", "/cloud-blob/metadata/1", business},
		{"metadata of a blob without a location", "/cloud-blob/metadata/2", ""},
		{"metadata refused", "/cloud-blob/metadata/3", ""},
		{"download", "/cloud-blob/download/1", business},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &trail{}
			do(t, auditedServer(t, a, st, &SchedulingMock{}, &SearchMock{}), "GET", tt.path, nil, "Authorization", "Bearer good-alice")
			if e := a.only(t); e.BusinessID != tt.want {
				t.Fatalf("businessId %q, want %q: %+v", e.BusinessID, tt.want, e)
			}
		})
	}
}

// A refused upload answers 422 malware_detected naming the signature, and
// its event (outcome error) records the signature in its detail; a scanner
// that cannot answer is 503 scanner_unavailable.
func TestAudit_AMalwareRefusalRecordsTheSignature(t *testing.T) {
	a := &trail{}
	var refusal error
	st := &StorageMock{UploadFunc: func(ctx context.Context, in storage.UploadInput) (storage.Blob, error) {
		io.Copy(io.Discard, in.Body)
		return storage.Blob{}, fmt.Errorf("upload: %w", refusal)
	}}
	s := auditedServer(t, a, st, nil, nil)
	upload := func() *httptest.ResponseRecorder {
		body, ct := form(t, part{"originalFilename", "x.png"}, part{"contentType", "image/png"}, part{"fileSize", "9"}, part{"file", "\x89PNG....."})
		return do(t, s, "POST", "/cloud-blob/upload", body, "Content-Type", ct)
	}

	e := storage.ErrMalwareDetected.WithMessage("The file carries malware (Eicar-Signature.UNOFFICIAL); it was not stored")
	e.Detail = map[string]string{"signature": "Eicar-Signature.UNOFFICIAL"}
	refusal = e
	w := upload()
	if env := errEnvelope(t, w); w.Code != 422 || env.Code != "malware_detected" || !strings.Contains(env.Message, "Eicar-Signature.UNOFFICIAL") {
		t.Fatalf("upload of malware: %d %s", w.Code, w.Body)
	}
	ev := a.only(t)
	if ev.Outcome != audit.Failed || ev.Status != 422 || ev.Action != audit.BlobUpload ||
		!sameDetail(ev.Detail, map[string]any{"signature": "Eicar-Signature.UNOFFICIAL"}) {
		t.Fatalf("event %+v", ev)
	}

	refusal = storage.ErrScannerUnavailable.Wrap(errors.New("dial tcp 127.0.0.1:3310: connection refused"))
	w = upload()
	if env := errEnvelope(t, w); w.Code != 503 || env.Code != "scanner_unavailable" || strings.Contains(w.Body.String(), "3310") {
		t.Fatalf("upload without a scanner: %d %s", w.Code, w.Body)
	}
	if ev := a.recorded()[1]; ev.Status != 503 || ev.Outcome != audit.Failed || len(ev.Detail) != 0 {
		t.Fatalf("event %+v", ev)
	}
}
