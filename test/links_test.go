package test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
)

// linkScopes may decide person links (u on Patient) and search.
const linkScopes = "user/Patient.rs user/Patient.u"

type linkAnswer struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
	Records  []struct {
		Source    string `json:"source"`
		PatientID string `json:"patientId"`
	} `json:"records"`
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
}

type linkPage struct {
	Items      []linkAnswer `json:"items"`
	TotalCount int          `json:"totalCount"`
	Page       int          `json:"page"`
	Limit      int          `json:"limit"`
}

func (s *server) postLink(token, body string, header ...string) response {
	s.t.Helper()
	return s.do("POST", "/api/v1/person-links", token, strings.NewReader(body), append([]string{"Content-Type", "application/json"}, header...)...)
}

func (s *server) listLinks(token string, header ...string) linkPage {
	s.t.Helper()
	r := s.do("GET", "/api/v1/person-links?page=1&limit=10", token, nil, header...)
	var p linkPage
	if r.status != 200 || r.header.Get("Cache-Control") != "no-store" || json.Unmarshal(r.body, &p) != nil {
		s.t.Fatalf("list links: %d %s", r.status, r.body)
	}
	return p
}

func TestPersonLinks_AMemberDecidesForItsPracticeOnly(t *testing.T) {
	w := newWorld(t)
	a, b := w.createBusiness("owner-a"), w.createBusiness("owner-b")
	fa := newFakeEHR(t, "clinica", fhirPatient("a-1", "Lopez", "Ana", "1980-02-01", "MRN-1"))
	fb := newFakeEHR(t, "clinicb", fhirPatient("b-1", "Lopez", "Ana", "1980-02-01", "MRN-1"))
	s := w.start(func(c *app.Config) { c.EHR, _ = ehrFile(t, 3000, fa, fb) })
	ownerA := w.scopedToken("owner-a", linkScopes)
	s.bdo("POST", "/business/"+a+"/members", ownerA, map[string]string{"subject": "staff-a", "role": "staff"}).data(t, 201, "Member added successfully")
	staffA, ownerB := w.scopedToken("staff-a", linkScopes), w.scopedToken("owner-b", linkScopes)

	// A staff member (any role) links two records; its only practice acts.
	r := s.postLink(staffA, `{"decision":"different","records":[{"source":"clinica","patientId":"a-1"},{"source":"clinicb","patientId":"b-1"}]}`)
	var link linkAnswer
	if r.status != 201 || r.header.Get("Cache-Control") != "no-store" || json.Unmarshal(r.body, &link) != nil {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if link.Decision != "different" || link.CreatedBy != "staff-a" || len(link.Records) != 2 || link.Records[0].PatientID != "a-1" ||
		link.Records[1].Source != "clinicb" || time.Since(link.CreatedAt) > time.Minute {
		t.Fatalf("link %+v", link)
	}
	if p := s.listLinks(staffA); p.TotalCount != 1 || len(p.Items) != 1 || p.Items[0].ID != link.ID || p.Page != 1 || p.Limit != 10 {
		t.Fatalf("A's links: %+v", p)
	}
	if p := s.listLinks(ownerB, "X-Business-Id", b); p.TotalCount != 0 || len(p.Items) != 0 {
		t.Fatalf("B sees A's links: %+v", p)
	}

	for _, tc := range []struct{ what, body string }{
		{"malformed", `{"decision":"same","records":[`},
		{"unknown key", `{"decision":"same","records":[{"source":"clinica","patientId":"a-1"},{"source":"clinicb","patientId":"b-1"}],"note":"x"}`},
		{"duplicate key", `{"decision":"same","decision":"different","records":[{"source":"clinica","patientId":"a-1"},{"source":"clinicb","patientId":"b-1"}]}`},
		{"same record twice", `{"decision":"same","records":[{"source":"clinica","patientId":"a-1"},{"source":"clinica","patientId":"a-1"}]}`},
		{"unknown source", `{"decision":"same","records":[{"source":"clinica","patientId":"a-1"},{"source":"nowhere","patientId":"b-1"}]}`},
		{"unknown decision", `{"decision":"maybe","records":[{"source":"clinica","patientId":"a-1"},{"source":"clinicb","patientId":"b-1"}]}`},
		{"one record", `{"decision":"same","records":[{"source":"clinica","patientId":"a-1"}]}`},
		{"three records", `{"decision":"same","records":[{"source":"clinica","patientId":"a-1"},{"source":"clinicb","patientId":"b-1"},{"source":"clinicb","patientId":"b-2"}]}`},
	} {
		if r := s.postLink(staffA, tc.body); r.status != 400 {
			t.Errorf("%s: %d %s", tc.what, r.status, r.body)
		} else {
			r.errorCode(t)
		}
	}
	r = s.postLink(w.token("staff-a"), `{"decision":"same","records":[{"source":"clinica","patientId":"a-1"},{"source":"clinicb","patientId":"b-1"}]}`)
	wantRefused(t, "without u on Patient", r, 403, "insufficient_scope")
	if !strings.Contains(r.header.Get("WWW-Authenticate"), `scope="user/Patient.u"`) {
		t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
	}
	wantRefused(t, "no membership", s.postLink(w.scopedToken("stranger", linkScopes), `{"decision":"same","records":[]}`), 400, "business_required")
	wantRefused(t, "another practice named", s.postLink(staffA, `{"decision":"same","records":[]}`, "X-Business-Id", b), 404, "business_not_found")

	// B cannot remove A's link, nor can anything that is not a link id.
	wantRefused(t, "B deleting A's link", s.do("DELETE", "/api/v1/person-links/"+link.ID, ownerB, nil), 404, "link_not_found")
	wantRefused(t, "not a UUID", s.do("DELETE", "/api/v1/person-links/nope", staffA, nil), 404, "link_not_found")
	if r := s.do("DELETE", "/api/v1/person-links/"+strings.ToUpper(link.ID), staffA, nil); r.status != 204 || len(r.body) != 0 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if p := s.listLinks(staffA); p.TotalCount != 0 {
		t.Fatalf("after delete: %+v", p)
	}
	wantRefused(t, "deleting twice", s.do("DELETE", "/api/v1/person-links/"+link.ID, staffA, nil), 404, "link_not_found")

	// The trail: one person.link and one person.unlink of the link, for A,
	// naming the decision and nothing of the patients.
	rows, err := w.db.Query(context.Background(), `SELECT action, outcome, resource_id, coalesce(business_id::text, ''), detail::text
		FROM audit_events WHERE action LIKE 'person.%' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var action, outcome, resource, business, detail string
		if err := rows.Scan(&action, &outcome, &resource, &business, &detail); err != nil {
			t.Fatal(err)
		}
		if outcome == "success" {
			if resource != link.ID || business != a {
				t.Errorf("%s event: resource %s business %s", action, resource, business)
			}
			got = append(got, action+" "+detail)
		}
		for _, leak := range []string{"a-1", "b-1", "Lopez", "MRN-1", "1980"} {
			if strings.Contains(detail, leak) {
				t.Errorf("%s event's detail %s holds patient data", action, detail)
			}
		}
	}
	if rows.Err() != nil || !slices.Equal(got, []string{`person.link {"decision": "different"}`, `person.unlink {"decision": "different"}`}) {
		t.Fatalf("events %q %v", got, rows.Err())
	}
}

// matchAnswer is a search answer of people with what matching says of
// each (the demo's tests read it too).
type matchAnswer struct {
	Status string `json:"status"`
	Data   struct {
		Results []struct {
			ID      string `json:"id"`
			Sources []struct {
				Source    string `json:"source"`
				PatientID string `json:"patientId"`
			} `json:"sources"`
			Name struct {
				Family string `json:"family"`
			} `json:"name"`
			Match *struct {
				Grade   string   `json:"grade"`
				Score   float64  `json:"score"`
				Reasons []string `json:"reasons"`
			} `json:"match"`
			PossibleMatches []struct {
				PersonID string   `json:"personId"`
				Score    float64  `json:"score"`
				Reasons  []string `json:"reasons"`
			} `json:"possibleMatches"`
		} `json:"results"`
		TotalCount int `json:"totalCount"`
	} `json:"data"`
	Metadata struct {
		CacheHit bool `json:"cacheHit"`
	} `json:"metadata"`
}

// TestPersonLinks_ALinkDecidesTheNextSearch needs the matcher (the
// contract's "Who is the same person"): until it lands, the first search
// already fails (no match.grade).
func TestPersonLinks_ALinkDecidesTheNextSearch(t *testing.T) {
	w := newWorld(t)
	w.createBusiness("owner-a")
	// Lopez: the same identifier, name and birth date in both: certain.
	// Okafor: the same name, birth dates apart: never certain.
	fa := newFakeEHR(t, "clinica", fhirPatient("a-1", "Lopez", "Ana", "1980-02-01", "MRN-1"), fhirPatient("a-2", "Okafor", "Bea", "1970-01-02", "MRN-2"))
	fb := newFakeEHR(t, "clinicb", fhirPatient("b-1", "Lopez", "Ana", "1980-02-01", "MRN-1"), fhirPatient("b-2", "Okafor", "Bea", "1971-05-06", "MRN-2"))
	s := w.start(func(c *app.Config) {
		c.EHR, _ = ehrFile(t, 3000, fa, fb)
		c.SearchCacheTTL, c.SearchRateLimit = time.Minute, 1000
	})
	tok := w.scopedToken("owner-a", linkScopes)
	search := func(what string) matchAnswer {
		t.Helper()
		r, ans := searchAs[matchAnswer](s, tok, `{"query":"family:Lopez"}`)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
		return ans
	}
	people := func(ans matchAnswer, family string) []int {
		var out []int
		for i, p := range ans.Data.Results {
			if p.Name.Family == family {
				out = append(out, i)
			}
		}
		return out
	}
	link := func(decision, x, y string) string {
		t.Helper()
		r := s.postLink(tok, `{"decision":"`+decision+`","records":[{"source":"clinica","patientId":"`+x+`"},{"source":"clinicb","patientId":"`+y+`"}]}`)
		var l linkAnswer
		if r.status != 201 || json.Unmarshal(r.body, &l) != nil {
			t.Fatalf("link %s: %d %s", decision, r.status, r.body)
		}
		return l.ID
	}

	ans := search("first")
	if l := people(ans, "Lopez"); len(l) != 1 || len(ans.Data.Results[l[0]].Sources) != 2 ||
		ans.Data.Results[l[0]].Match == nil || ans.Data.Results[l[0]].Match.Grade != "certain" {
		t.Fatalf("certain records not one person: %+v", ans.Data.Results)
	}

	id := link("different", "a-1", "b-1")
	ans = search("after different")
	if !ans.Metadata.CacheHit {
		t.Error("the search after a link is not a cache hit")
	}
	l := people(ans, "Lopez")
	if len(l) != 2 {
		t.Fatalf("different records merged: %+v", ans.Data.Results)
	}
	for i, j := range l {
		p, other := ans.Data.Results[j], ans.Data.Results[l[1-i]]
		if p.Match != nil || len(p.Sources) != 1 {
			t.Errorf("person %+v: want one record, match null", p)
		}
		for _, m := range p.PossibleMatches {
			if m.PersonID == other.ID {
				t.Errorf("person %s lists %s, decided different, as a possible match", p.ID, other.ID)
			}
		}
	}

	if r := s.do("DELETE", "/api/v1/person-links/"+id, tok, nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if l := people(search("after delete"), "Lopez"); len(l) != 1 {
		t.Fatal("not merged again after the link was removed")
	}

	link("same", "a-2", "b-2")
	ans = search("after same")
	o := people(ans, "Okafor")
	if len(o) != 1 || len(ans.Data.Results[o[0]].Sources) != 2 {
		t.Fatalf("a same link did not merge: %+v", ans.Data.Results)
	}
	if m := ans.Data.Results[o[0]].Match; m == nil || m.Grade != "confirmed" || !slices.Equal(m.Reasons, []string{"link"}) {
		t.Fatalf("match %+v, want confirmed [link]", m)
	}
}
