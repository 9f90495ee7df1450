package httpapi

import (
	"testing"
)

// A businessLocationId is read in digits only, at the edge: "+7" or "07"
// is a 400, and the core is never asked. (Path ids are parsed as numbers
// and named by their parsed value everywhere, so "0005" is blob 5.)
func TestUpload_ALocationIDIsDigitsOnly(t *testing.T) {
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
	if n := len(st.UploadCalls()); n != 0 {
		t.Fatalf("the core was asked %d times", n)
	}
}
