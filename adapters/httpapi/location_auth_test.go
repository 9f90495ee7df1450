package httpapi

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
)

// untouchedBody is a request body that counts the bytes read from it.
type untouchedBody struct {
	r    *strings.Reader
	read atomic.Int64
}

func (b *untouchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// The caller's role is checked before the location form is read: a
// stranger (404) or a staff member (403) sending a 5 MiB logo is answered
// without a byte of it read, and the core's create or update is never
// asked.
func TestLocationForm_TheRoleIsCheckedBeforeTheBodyIsRead(t *testing.T) {
	tests := []struct {
		name, method, path string
		refusal            error
		status             int
		code               string
	}{
		{"stranger creates", "POST", "/business/location/" + bizID + "/", business.ErrBusinessNotFound, 404, "business_not_found"},
		{"staff creates", "POST", "/business/location/" + bizID + "/", core.ErrInsufficientRole, 403, "insufficient_role"},
		{"stranger updates", "PUT", "/business/location/3/update", business.ErrLocationNotFound, 404, "location_not_found"},
		{"staff updates", "PUT", "/business/location/3/update", core.ErrInsufficientRole, 403, "insufficient_role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &BusinessMock{
				AuthorizeLocationCreateFunc: func(context.Context, string) error { return tt.refusal },
				AuthorizeLocationUpdateFunc: func(context.Context, int64) error { return tt.refusal },
			}
			form, ct := locationForm(t, formPart{name: "generalInfo[name]", value: "Main"},
				formPart{name: "logo", value: "\x89PNG\r\n\x1a\n" + strings.Repeat("x", business.MaxLogoBytes-8), filename: "logo.png", ct: "image/png"})
			raw, err := io.ReadAll(form)
			if err != nil {
				t.Fatal(err)
			}
			body := &untouchedBody{r: strings.NewReader(string(raw))}
			w := biz(t, newBusinessServer(t, m), tt.method, tt.path, body, "Content-Type", ct)
			if e := errEnvelope(t, w); w.Code != tt.status || e.Code != tt.code {
				t.Fatalf("got %d %s, want %d %s", w.Code, e.Code, tt.status, tt.code)
			}
			if w.Header().Get("Connection") != "close" {
				t.Error("the refusal keeps the connection: net/http would read the body to reuse it")
			}
			if n := body.read.Load(); n != 0 {
				t.Fatalf("%d bytes of the body were read before the refusal", n)
			}
			if n := len(m.AuthorizeLocationCreateCalls()) + len(m.AuthorizeLocationUpdateCalls()); n != 1 {
				t.Fatalf("%d role checks, want 1", n)
			}
		})
	}
}
