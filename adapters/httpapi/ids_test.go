package httpapi

import (
	"testing"
)

// Ids are read in digits only, at the edge: a businessLocationId or a path
// id such as "+7" or "07" is a 400, and the core is never asked.
func TestIDs_DigitsOnly(t *testing.T) {
	st := &StorageMock{}
	s := newTestServer(t, st)
	for _, id := range []string{"+7", "07", "7.0", " 7x"} {
		body, ct := form(t, part{"originalFilename", "a.png"}, part{"contentType", "image/png"}, part{"fileSize", "4"},
			part{"businessLocationId", id}, part{"file", "\x89PNG"})
		w := do(t, s, "POST", "/cloud-blob/upload", body, "Content-Type", ct)
		if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_business_location_id" {
			t.Errorf("businessLocationId %q: %d %s", id, w.Code, e.Code)
		}
	}
	for _, p := range []string{"/cloud-blob/metadata/+1", "/cloud-blob/metadata/01", "/cloud-blob/download/+1"} {
		w := do(t, s, "GET", p, nil)
		if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_id" {
			t.Errorf("%s: %d %s", p, w.Code, e.Code)
		}
	}
	if n := len(st.UploadCalls()) + len(st.MetadataCalls()) + len(st.DownloadCalls()); n != 0 {
		t.Fatalf("the core was asked %d times", n)
	}
	w := do(t, s, "GET", "/business/location/+5/providers", nil, "user-type", "business")
	if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_id" {
		t.Errorf("business path id +5: %d %s", w.Code, e.Code)
	}
}
