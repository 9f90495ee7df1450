package wsbot_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
	"github.com/carebridge/carebridge/test/wsbottest"
)

func day(y, m, d int) ehr.Date { return ehr.Date{Year: y, Month: time.Month(m), Day: d} }

func recordDates(rs []ehr.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Date
	}
	return out
}

func TestClient_SearchRecords_OfThePersonAndTypeInTheRange(t *testing.T) {
	srv := wsbottest.Start(t)
	loinc := "http://loinc.org"
	obs := func(date string, v *ehr.RecordValue) ehr.Record {
		return ehr.Record{Type: ehr.TypeObservation, PatientID: "p1", Date: date, Status: "final",
			Code: ehr.Coding{System: loinc, Code: "2345-7", Display: "Glucose"}, Text: "Glucose", Value: v}
	}
	quantity := srv.AddRecord(obs("2024-06-15T23:30:00-05:00", &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "5.40", Unit: "mmol/L"}}))
	text := srv.AddRecord(obs("2024-01-01", &ehr.RecordValue{String: "negative"}))
	for _, d := range []string{"2023-12-31", "2024-12-31", "2025-01-01", "", "2024"} {
		srv.AddRecord(obs(d, nil))
	}
	srv.AddRecord(ehr.Record{Type: ehr.TypeCondition, PatientID: "p1", Date: "2024-03-01"})
	srv.AddRecord(ehr.Record{Type: ehr.TypeObservation, PatientID: "p2", Date: "2024-03-01"})
	c := newClient(t, srv.URL(), nil)

	all, err := c.SearchRecords(t.Context(), ehr.RecordQuery{Type: ehr.TypeObservation, PatientID: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2025-01-01", "2024-12-31", "2024-06-15T23:30:00-05:00", "2024-01-01", "2024", "2023-12-31", ""}
	if got := recordDates(all); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("dates = %q; want %q (the person's observations, newest first, undated kept)", got, want)
	}
	for _, r := range all {
		if r.Type != ehr.TypeObservation || r.PatientID != "p1" || r.Status != "final" || r.Text != "Glucose" ||
			r.Code != (ehr.Coding{System: loinc, Code: "2345-7", Display: "Glucose"}) || !r.LastUpdated.IsZero() || r.Attachment != nil {
			t.Errorf("record %+v", r)
		}
		switch r.ID {
		case quantity:
			if r.Value == nil || r.Value.Quantity == nil || *r.Value.Quantity != (ehr.Quantity{Value: "5.40", Unit: "mmol/L"}) {
				t.Errorf("quantity value = %+v; want 5.40 mmol/L as written", r.Value)
			}
		case text:
			if r.Value == nil || r.Value.Quantity != nil || r.Value.String != "negative" {
				t.Errorf("string value = %+v", r.Value)
			}
		default:
			if r.Value != nil {
				t.Errorf("record %s: value = %+v; want nil", r.ID, r.Value)
			}
		}
	}

	in2024, err := c.SearchRecords(t.Context(), ehr.RecordQuery{Type: ehr.TypeObservation, PatientID: "p1",
		From: day(2024, 1, 1), To: day(2024, 12, 31)})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"2024-12-31", "2024-06-15T23:30:00-05:00", "2024-01-01", "2024"}
	if got := recordDates(in2024); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("2024 = %q; want %q (inclusive by the day as written, undated left out)", got, want)
	}

	none, err := c.SearchRecords(t.Context(), ehr.RecordQuery{Type: ehr.TypeImmunization, PatientID: "p1"})
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("no immunizations = %v, %v; want an empty list", none, err)
	}
}

// seedObservations adds n observations of p1, one a day from 2020-01-01.
func seedObservations(srv *wsbottest.Server, n int) {
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		srv.AddRecord(ehr.Record{Type: ehr.TypeObservation, PatientID: "p1", ID: fmt.Sprintf("obs-%03d", i),
			Date: start.AddDate(0, 0, i).Format(time.DateOnly)})
	}
}

func TestClient_SearchRecords_FollowsThePagesToTheEnd(t *testing.T) {
	srv := wsbottest.Start(t)
	seedObservations(srv, 250)
	c := newClient(t, srv.URL(), nil)
	before := srv.Requests()
	rs, err := c.SearchRecords(t.Context(), ehr.RecordQuery{Type: ehr.TypeObservation, PatientID: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 250 {
		t.Fatalf("%d records; want 250", len(rs))
	}
	seen := map[string]bool{}
	for i, r := range rs {
		if want := fmt.Sprintf("obs-%03d", 249-i); r.ID != want || seen[r.ID] {
			t.Fatalf("record %d is %s; want %s (newest first, each once)", i, r.ID, want)
		}
		seen[r.ID] = true
	}
	if n := srv.Requests() - before; n != 3 {
		t.Errorf("%d requests; want 3 pages of 100", n)
	}
}

func TestClient_SearchRecords_PastTheBoundIsAnError(t *testing.T) {
	srv := wsbottest.Start(t)
	seedObservations(srv, 250)
	c := newClient(t, srv.URL(), nil)
	q := ehr.RecordQuery{Type: ehr.TypeObservation, PatientID: "p1"}

	wsbot.SetMaxRecords(c, 250)
	if rs, err := c.SearchRecords(t.Context(), q); err != nil || len(rs) != 250 {
		t.Fatalf("at the bound: %d records, %v; want 250", len(rs), err)
	}
	wsbot.SetMaxRecords(c, 249)
	rs, err := c.SearchRecords(t.Context(), q)
	wantCode(t, "past the bound", err, core.KindBadGateway, "ehr_listing_inexact")
	if rs != nil {
		t.Errorf("past the bound: %d records returned with the error; want none", len(rs))
	}
}

func TestClient_SearchRecords_UnknownActionIsRecordTypeNotSupported(t *testing.T) {
	srv := wsbottest.Start(t, wsbottest.WithoutRecords())
	c := newClient(t, srv.URL(), nil)
	_, err := c.SearchRecords(t.Context(), ehr.RecordQuery{Type: ehr.TypeCondition, PatientID: "p1"})
	wantCode(t, "a bot without records.search", err, core.KindBadGateway, "record_type_not_supported")
	if errors.Is(err, ehr.ErrRecordTypeNotSupported) {
		t.Errorf("%v is the request's 400; want the source's failure", err)
	}
	if _, err := c.ListAgents(t.Context(), ehr.AgentFilter{}); err != nil {
		t.Errorf("the other actions still answer: %v", err)
	}
}

func TestClient_SearchRecords_BadAnswers(t *testing.T) {
	srv := wsbottest.Start(t)
	srv.AddRecord(ehr.Record{Type: ehr.TypeObservation, PatientID: "p1", Date: "2024-01-01",
		Value: &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "high", Unit: "mg"}}})
	c := newClient(t, srv.URL(), nil)
	_, err := c.SearchRecords(t.Context(), ehr.RecordQuery{Type: ehr.TypeObservation, PatientID: "p1"})
	wantCode(t, "a quantity whose value is a string", err, core.KindBadGateway, "ehr_bad_response")

	// A type the bot refuses (invalid) is that source's failure, not the
	// request's 400.
	_, err = c.SearchRecords(t.Context(), ehr.RecordQuery{Type: "Patient", PatientID: "p1"})
	wantCode(t, "a type the bot refuses", err, core.KindBadGateway, "ehr_error")
}

// The record search contract on the bot (pages of at most 100 items);
// a bot record carries no attachment.
func TestClient_RecordSearcherContract(t *testing.T) {
	ehrtest.TestRecordSearcher(t, func(t *testing.T) ehrtest.RecordBackend {
		srv := wsbottest.Start(t)
		return ehrtest.RecordBackend{
			Searcher:     newClient(t, srv.URL(), nil),
			NoAttachment: true,
			AddPatient:   func(*testing.T) string { return ehrtest.NewID() },
			AddRecords: func(_ *testing.T, seeds []ehrtest.SeedRecord) []string {
				ids := make([]string, len(seeds))
				for i, sd := range seeds {
					ids[i] = srv.AddRecord(sd.Record)
				}
				return ids
			},
		}
	})
}
