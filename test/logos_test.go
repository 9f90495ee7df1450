package test

import (
	"context"
	"fmt"
	"testing"
)

// A logo replaced by another manager than its uploader goes, row and
// object: nothing of the old logo stays behind.
func TestLocation_ALogoReplacedByAnotherAdminLeavesNoOrphan(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	id := w.createBusiness("owner")
	owner, admin := w.token("owner"), w.token("admin")
	s.bdo("POST", "/business/"+id+"/members", owner, map[string]string{"subject": "admin", "role": "admin"}).data(t, 201, "Member added successfully")

	d := s.bdo("POST", "/business/location/"+id+"/", owner, locationForm(t, false, general, address, pngLogo, "logo.png", "image/png")).
		data(t, 201, "Complete business location created successfully").(map[string]any)
	loc, first := int64(d["locationId"].(float64)), int64(d["logoBlobId"].(float64))

	d = s.bdo("PUT", fmt.Sprintf("/business/location/%d/update", loc), admin,
		locationForm(t, false, map[string]string{"name": "Renamed"}, nil, pngLogo[:200], "second.png", "image/png")).
		data(t, 200, "Business location updated successfully").(map[string]any)
	second := int64(d["logoBlobId"].(float64))
	if second == first {
		t.Fatalf("the logo was not replaced: %v", d)
	}
	for _, tok := range []string{owner, admin} {
		if r := s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", first), tok, nil); r.status != 404 {
			t.Fatalf("the replaced logo is still there: %d %s", r.status, r.body)
		}
	}
	if w.rows() != 1 || w.objects() != 1 {
		t.Fatalf("%d blob rows and %d objects after the admin's replacement; want the one current logo", w.rows(), w.objects())
	}
	var deleted []string
	rows, err := w.db.Query(context.Background(), `SELECT coalesce(business_id::text, '') FROM events WHERE type = 'blob.deleted'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var b string
		rows.Scan(&b)
		deleted = append(deleted, b)
	}
	if len(deleted) != 1 || deleted[0] != id {
		t.Fatalf("blob.deleted events of businesses %v, want one of %s", deleted, id)
	}
}
