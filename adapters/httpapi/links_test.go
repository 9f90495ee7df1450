package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
)

const linkBiz = "aaaaaaaa-0000-0000-0000-000000000001"

// linkServer is the API over links, acting for linkBiz unless the request
// names another business (then 404), with the trail a.
func linkServer(t *testing.T, links *LinksMock, a *trail) (*Server, *[]ehr.Use) {
	t.Helper()
	var uses []ehr.Use
	tenancy := tenancyFunc(func(_ context.Context, requested string, use ehr.Use) (string, error) {
		uses = append(uses, use)
		if requested != "" && requested != linkBiz {
			return "", ehr.ErrBusinessNotFound
		}
		return linkBiz, nil
	})
	return New(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Links: links, Tenancy: tenancy,
		Audit: a, Registry: prometheus.NewRegistry(), Ready: func(context.Context) error { return nil }}), &uses
}

var aLink = ehr.PersonLink{ID: "0b6f0b9e-7c1a-4a57-9a44-0d1d1b8e0a01", Business: linkBiz, Decision: ehr.Different,
	Records:   [2]ehr.SourceRef{{Source: "clinic-a", PatientID: "p-1"}, {Source: "clinic-b", PatientID: "p-9"}},
	CreatedBy: "alice", CreatedAt: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}

func TestLinks_CreateAnswers201WithTheLinkAndCommitsItsEventWithIt(t *testing.T) {
	a := &trail{}
	var got ehr.LinkRequest
	links := &LinksMock{CreateFunc: func(ctx context.Context, r ehr.LinkRequest) (ehr.PersonLink, error) {
		got = r
		a.commitWithChange(ctx, aLink.ID)
		return aLink, nil
	}}
	s, uses := linkServer(t, links, a)
	w := do(t, s, "POST", "/api/v1/person-links", strings.NewReader(
		`{"decision":"different","records":[{"source":"clinic-a","patientId":"p-1"},{"source":"clinic-b","patientId":"p-9"}]}`),
		"Content-Type", "application/json")
	if w.Code != 201 || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %s %v", w.Code, w.Body, w.Header())
	}
	want := `{"id":"0b6f0b9e-7c1a-4a57-9a44-0d1d1b8e0a01","decision":"different","records":[{"source":"clinic-a","patientId":"p-1"},` +
		`{"source":"clinic-b","patientId":"p-9"}],"createdBy":"alice","createdAt":"2030-01-02T03:04:05Z"}`
	if strings.TrimSpace(w.Body.String()) != want {
		t.Fatalf("body %s\nwant %s", w.Body, want)
	}
	if got.Business != linkBiz || got.Decision != "different" || len(got.Records) != 2 || got.Records[1] != aLink.Records[1] {
		t.Fatalf("request %+v", got)
	}
	if len(*uses) != 1 || (*uses)[0] != ehr.UseLinks {
		t.Fatalf("acting uses %v", *uses)
	}
	if len(a.events) != 1 || a.events[0].Action != audit.PersonLink || a.events[0].ResourceType != "person_link" ||
		a.events[0].Status != 201 || a.events[0].BusinessID != linkBiz || a.events[0].ResourceID != aLink.ID {
		t.Fatalf("events %+v", a.events)
	}
}

func TestLinks_CreateRefusesMalformedBodiesBeforeTheUseCase(t *testing.T) {
	links := &LinksMock{CreateFunc: func(context.Context, ehr.LinkRequest) (ehr.PersonLink, error) {
		t.Fatal("the use case was called")
		return ehr.PersonLink{}, nil
	}}
	s, _ := linkServer(t, links, &trail{})
	for _, body := range []string{
		`{"decision":"same","records":[]`,
		`{"decision":"same","records":[],"extra":1}`,
		`{"decision":"same","decision":"different","records":[]}`,
		`{"decision":"same","records":[{"source":"a","patientId":"1","mrn":"x"}]}`,
		`{"decision":"same","records":[{"source":"a","patientId":1}]}`,
		`[]`,
	} {
		w := do(t, s, "POST", "/api/v1/person-links", strings.NewReader(body), "Content-Type", "application/json")
		if e := errEnvelope(t, w); w.Code != 400 {
			t.Errorf("%s: %d %s", body, w.Code, e.Code)
		}
	}
}

func TestLinks_TheUseCasesRefusalsUseTheEnvelope(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{ehr.ErrInvalidLink.WithMessage("records must name two different records"), 400, "invalid_link"},
		{core.InsufficientScope("user/Patient.u"), 403, "insufficient_scope"},
		{ehr.ErrBusinessRequired, 400, "business_required"},
	} {
		a := &trail{}
		s, _ := linkServer(t, &LinksMock{CreateFunc: func(context.Context, ehr.LinkRequest) (ehr.PersonLink, error) {
			return ehr.PersonLink{}, tc.err
		}}, a)
		w := do(t, s, "POST", "/api/v1/person-links", strings.NewReader(`{"decision":"same","records":[]}`), "Content-Type", "application/json")
		if e := errEnvelope(t, w); w.Code != tc.status || e.Code != tc.code {
			t.Errorf("%v: %d %s", tc.err, w.Code, e.Code)
		}
		if tc.status == 403 && !strings.Contains(w.Header().Get("WWW-Authenticate"), `scope="user/Patient.u"`) {
			t.Errorf("WWW-Authenticate %q", w.Header().Get("WWW-Authenticate"))
		}
		if len(a.events) != 1 || a.events[0].Status != tc.status || a.events[0].Action != audit.PersonLink {
			t.Errorf("events %+v", a.events)
		}
	}
}

func TestLinks_AChangeIsRefusedWhenTheTrailCannotBeWritten(t *testing.T) {
	for _, rq := range []struct{ method, path, body string }{
		{"POST", "/api/v1/person-links", `{"decision":"same","records":[]}`},
		{"DELETE", "/api/v1/person-links/" + aLink.ID, ""},
	} {
		links := &LinksMock{
			CreateFunc: func(context.Context, ehr.LinkRequest) (ehr.PersonLink, error) { t.Fatal("created"); return aLink, nil },
			DeleteFunc: func(context.Context, string, string) (ehr.PersonLink, error) { t.Fatal("deleted"); return aLink, nil },
		}
		s, _ := linkServer(t, links, &trail{failReady: errors.New("down"), failRecord: func(audit.Event) error { return errors.New("down") }})
		w := do(t, s, rq.method, rq.path, strings.NewReader(rq.body), "Content-Type", "application/json")
		if e := errEnvelope(t, w); w.Code != 503 || e.Code != "audit_unavailable" {
			t.Errorf("%s: %d %s", rq.method, w.Code, e.Code)
		}
	}
}

func TestLinks_DeleteAnswers204OrNotFound(t *testing.T) {
	a := &trail{}
	var asked []string
	links := &LinksMock{DeleteFunc: func(ctx context.Context, business, id string) (ehr.PersonLink, error) {
		asked = append(asked, business+" "+id)
		if id != aLink.ID {
			return ehr.PersonLink{}, ehr.ErrLinkNotFound
		}
		a.commitWithChange(ctx, id)
		return aLink, nil
	}}
	s, _ := linkServer(t, links, a)
	w := do(t, s, "DELETE", "/api/v1/person-links/"+strings.ToUpper(aLink.ID), nil)
	if w.Code != 204 || w.Body.Len() != 0 || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	w = do(t, s, "DELETE", "/api/v1/person-links/not-a-uuid", nil)
	if e := errEnvelope(t, w); w.Code != 404 || e.Code != "link_not_found" {
		t.Fatalf("%d %s", w.Code, e.Code)
	}
	w = do(t, s, "DELETE", "/api/v1/person-links/"+aLink.ID, nil, "X-Business-Id", "bbbbbbbb-0000-0000-0000-000000000002")
	if e := errEnvelope(t, w); w.Code != 404 || e.Code != "business_not_found" {
		t.Fatalf("another business: %d %s", w.Code, e.Code)
	}
	if len(asked) != 2 || asked[0] != linkBiz+" "+aLink.ID {
		t.Fatalf("asked %v", asked)
	}
	if len(a.events) != 3 || a.events[0].Action != audit.PersonUnlink || a.events[0].Status != 204 ||
		a.events[1].Status != 404 || a.events[1].ResourceID != "" || a.events[2].Status != 404 {
		t.Fatalf("events %+v", a.events)
	}
}

func TestLinks_ListAnswersAPageUnaudited(t *testing.T) {
	a := &trail{}
	var asked []ehr.PageRequest
	links := &LinksMock{ListFunc: func(_ context.Context, business string, p ehr.PageRequest) (ehr.Page[ehr.PersonLink], error) {
		asked = append(asked, p)
		return ehr.Page[ehr.PersonLink]{Items: []ehr.PersonLink{aLink}, TotalCount: 3, Page: 2, Limit: 1}, nil
	}}
	s, _ := linkServer(t, links, a)
	w := do(t, s, "GET", "/api/v1/person-links?page=2&limit=1", nil)
	var body struct {
		Items                   []linkResponse
		TotalCount, Page, Limit int
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 200 || len(body.Items) != 1 ||
		body.TotalCount != 3 || body.Page != 2 || body.Limit != 1 || body.Items[0].ID != aLink.ID {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if w.Header().Get("Cache-Control") != "no-store" || len(asked) != 1 || asked[0] != (ehr.PageRequest{Page: 2, Limit: 1}) {
		t.Fatalf("asked %v, headers %v", asked, w.Header())
	}
	for _, q := range []string{"page=0", "limit=-1", "page=x", "limit=99999999999999999999"} {
		w := do(t, s, "GET", "/api/v1/person-links?"+q, nil)
		if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_link" {
			t.Errorf("%s: %d %s", q, w.Code, e.Code)
		}
	}
	if len(asked) != 1 || len(a.events) != 0 {
		t.Fatalf("asked %v, events %v", asked, a.events)
	}
}
