package fhirtest_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/test/fhirtest"
)

func patient(family, given, birthDate string) map[string]any {
	return map[string]any{
		"name":      []any{map[string]any{"family": family, "given": []any{given}}},
		"birthDate": birthDate,
	}
}

func entries(t *testing.T, bundle map[string]any) []map[string]any {
	t.Helper()
	if bundle["resourceType"] != "Bundle" {
		t.Fatalf("not a Bundle: %v", bundle)
	}
	raw, _ := bundle["entry"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, e := range raw {
		out = append(out, e.(map[string]any)["resource"].(map[string]any))
	}
	return out
}

func link(bundle map[string]any, relation string) string {
	links, _ := bundle["link"].([]any)
	for _, l := range links {
		m := l.(map[string]any)
		if m["relation"] == relation {
			s, _ := m["url"].(string)
			return s
		}
	}
	return ""
}

func TestIntegrationServer_SearchesByFamilyAndPagesWithNextLink(t *testing.T) {
	srv := fhirtest.Start(t)
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") || !strings.HasSuffix(srv.URL(), "/fhir") {
		t.Fatalf("URL() = %q, want http://127.0.0.1:PORT/fhir", srv.URL())
	}
	ids := map[string]bool{}
	for _, p := range []map[string]any{
		patient("Okafor", "Ada", "1980-01-02"),
		patient("Okafor", "Bola", "1990-05-06"),
		patient("Lindqvist", "Cara", "2001-12-31"),
	} {
		id := srv.CreatePatient(t, p)
		if ids[id] {
			t.Fatalf("duplicate id %q", id)
		}
		ids[id] = true
	}

	status, b := srv.Get(t, "Patient?family=okafor")
	if status != http.StatusOK {
		t.Fatalf("search status %d: %v", status, b)
	}
	got := entries(t, b)
	if len(got) != 2 {
		t.Fatalf("family=okafor: %d patients, want 2: %v", len(got), b)
	}
	for _, p := range got {
		if !ids[p["id"].(string)] {
			t.Errorf("unknown id %v", p["id"])
		}
	}

	// Three patients in pages of two: a next link, then a last page.
	_, page1 := srv.Get(t, "Patient?_count=2")
	if n := len(entries(t, page1)); n != 2 {
		t.Fatalf("page 1: %d entries, want 2", n)
	}
	next := link(page1, "next")
	if next == "" {
		t.Fatalf("page 1 has no next link: %v", page1["link"])
	}
	u, err := url.Parse(next)
	if err != nil || !strings.HasPrefix(next, srv.URL()+"/Patient?") {
		t.Fatalf("next link %q is not under %s: %v", next, srv.URL(), err)
	}
	if u.Query().Get("_count") != "2" {
		t.Errorf("next link %q lost _count", next)
	}
	_, page2 := srv.Get(t, next)
	p2 := entries(t, page2)
	if len(p2) != 1 {
		t.Fatalf("page 2: %d entries, want 1", len(p2))
	}
	if link(page2, "next") != "" {
		t.Errorf("last page has a next link: %v", page2["link"])
	}
	seen := map[string]bool{}
	for _, p := range append(entries(t, page1), p2...) {
		seen[p["id"].(string)] = true
	}
	if len(seen) != 3 {
		t.Errorf("pages returned %d distinct patients, want 3", len(seen))
	}
}

func TestIntegrationServer_RejectsRequestWithoutAPIKey(t *testing.T) {
	srv := fhirtest.Start(t, fhirtest.WithAPIKey("k-123"))
	srv.CreatePatient(t, patient("Okafor", "Ada", "1980-01-02")) // the helper sends the key

	resp, err := http.Get(srv.URL() + "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without X-API-Key: status %d, want 401", resp.StatusCode)
	}
	if status, b := srv.Get(t, "Patient"); status != http.StatusOK || len(entries(t, b)) != 1 {
		t.Fatalf("with X-API-Key: status %d, %v", status, b)
	}
}

func TestIntegrationServer_AnswersOperationOutcomeForInvalidPatient(t *testing.T) {
	srv := fhirtest.Start(t)
	status, b := srv.Get(t, "Patient?birthdate=not-a-date")
	if status != http.StatusBadRequest || b["resourceType"] != "OperationOutcome" {
		t.Fatalf("bad date search: status %d, %v", status, b)
	}
	status, b = srv.Get(t, "Patient/does-not-exist")
	if status != http.StatusNotFound || b["resourceType"] != "OperationOutcome" {
		t.Fatalf("read of a missing patient: status %d, %v", status, b)
	}
}
