package test

import (
	"context"
	"fmt"
	"testing"
)

// A businessLocationId is a location id written in digits only: "+5" or
// "05" is not location 5 (which would be checked as 5, stored as written,
// and leave the upload's event without its business) but a 400 in the
// error envelope, and nothing is stored.
func TestBlob_ALocationIDIsDigitsOnlyAndItsEventNamesTheBusiness(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	loc := w.seedLocation("owner")
	tok := w.token("owner")

	for _, id := range []string{"+" + fmt.Sprint(loc), "0" + fmt.Sprint(loc), fmt.Sprint(loc) + ".0", "-" + fmt.Sprint(loc), "0x1"} {
		r := s.upload(tok, fileFields("note.txt", "text/plain", []byte("a note"), field{"businessLocationId", id})...)
		if code := r.errorCode(t); r.status != 400 || code != "invalid_business_location_id" {
			t.Errorf("businessLocationId %q: %d %s", id, r.status, r.body)
		}
	}
	if n := w.rows(); n != 0 {
		t.Fatalf("%d rows after refused uploads", n)
	}

	r := s.upload(tok, fileFields("note.txt", "text/plain", []byte("a note"), field{"businessLocationId", fmt.Sprint(loc)})...)
	if r.status != 201 || r.json(t)["businessLocationId"] != fmt.Sprint(loc) {
		t.Fatalf("upload for location %d: %d %s", loc, r.status, r.body)
	}
	var business *string
	if err := w.db.QueryRow(context.Background(), `SELECT business_id::text FROM events WHERE type = 'blob.uploaded'`).Scan(&business); err != nil {
		t.Fatal(err)
	}
	var want string
	if err := w.db.QueryRow(context.Background(), `SELECT business_id::text FROM business_locations WHERE id = $1`, loc).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if business == nil || *business != want {
		t.Fatalf("the upload's event carries business %v, want %s", business, want)
	}
}
