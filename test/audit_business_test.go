package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Every blob request's audit event carries the business of the blob's
// location as businessId, null for a blob without a location: in the
// table, in `carebridge audit list` (and its --business filter), and the
// chain still verifies.
func TestAudit_BlobEventsCarryTheBusinessOfTheBlobsLocation(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	biz := w.createBusiness("owner")
	owner := w.token("owner")
	loc := fmt.Sprint(int64(s.bdo("POST", "/business/location/"+biz+"/", owner, locationForm(t, false, map[string]string{"name": "Main"}, nil, nil, "", "")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"].(float64)))

	want := map[string]string{} // request id → business id, "" for none
	// requests makes a blob (at location loc, or none) and reads, downloads
	// and deletes it.
	requests := func(loc, business string) {
		t.Helper()
		var at []field
		if loc != "" {
			at = append(at, field{"businessLocationId", loc})
		}
		up := s.upload(owner, fileFields("note.txt", "text/plain", []byte("hello "+business), at...)...)
		if up.status != 201 {
			t.Fatalf("upload: %d %s", up.status, up.body)
		}
		id := int64(up.json(t)["id"].(float64))
		want[up.header.Get("X-Request-Id")] = business
		for _, r := range []response{
			s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", id), owner, nil),
			s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), owner, nil),
			s.do("DELETE", fmt.Sprintf("/cloud-blob/%d", id), owner, nil),
		} {
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			want[r.header.Get("X-Request-Id")] = business
		}
	}
	requests(loc, biz)
	requests("", "")

	rows, err := w.db.Query(context.Background(), `SELECT request_id, action, coalesce(business_id::text, 'NULL') FROM audit_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var req, action, business string
		if err := rows.Scan(&req, &action, &business); err != nil {
			t.Fatal(err)
		}
		n++
		if wb, ok := want[req]; !ok || business != map[bool]string{true: "NULL", false: wb}[wb == ""] {
			t.Errorf("%s event of request %s: business_id %s, want %q", action, req, business, wb)
		}
	}
	if rows.Err() != nil || n != len(want) {
		t.Fatalf("%d events for %d requests: %v", n, len(want), rows.Err())
	}

	out, code := carebridge(t, w.dbURL, "audit", "list", "--since", "1h")
	if code != 0 {
		t.Fatalf("audit list: exit %d", code)
	}
	lines := 0
	for line := range strings.Lines(out) {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		business, present := e["businessId"]
		wb := want[e["requestId"].(string)]
		if !present || (wb == "" && business != nil) || (wb != "" && business != wb) {
			t.Errorf("audit list line %s: want businessId %q", line, wb)
		}
		lines++
	}
	if lines != len(want) {
		t.Fatalf("audit list: %d lines, want %d", lines, len(want))
	}
	out, code = carebridge(t, w.dbURL, "audit", "list", "--since", "1h", "--business", biz)
	if code != 0 || strings.Count(out, "\n") != 4 || strings.Count(out, `"businessId":"`+biz+`"`) != 4 {
		t.Fatalf("audit list --business: exit %d\n%s", code, out)
	}
	if out, code := carebridge(t, w.dbURL, "audit", "verify"); code != 0 || strings.TrimSpace(out) != fmt.Sprintf(`{"events":%d,"ok":true}`, len(want)) {
		t.Fatalf("audit verify: exit %d %s", code, out)
	}
}
