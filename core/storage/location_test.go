package storage

import (
	"bytes"
	"errors"
	"testing"
)

// A location id is written in digits only: "+7" or "07" would be checked as
// location 7 but stored as sent, and its event would name no business.
func TestUpload_ALocationIDIsDigitsOnly(t *testing.T) {
	text := []byte("hello")
	for _, id := range []string{"+" + ownedLocation, "0" + ownedLocation, ownedLocation + ".0", "-7", " 7", "0", "seven", "99999999999999999999"} {
		f := newFixture(t)
		in := UploadInput{OriginalFilename: "note.txt", ContentType: "text/plain", FileSize: int64(len(text)), Body: bytes.NewReader(text), BusinessLocationID: id}
		if _, err := f.svc.Upload(as("owner"), in); !errors.Is(err, ErrInvalidLocationID) {
			t.Errorf("location %q: %v, want invalid_business_location_id", id, err)
		}
		if n := len(f.svc.members.(*MembersMock).LocationRoleCalls()); n != 0 {
			t.Errorf("location %q was looked up", id)
		}
		f.assertNothingKept(t)
	}
}
