package test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A caller who may not change the business is answered before its form
// is read: a stranger's or a staff member's location form, whose 5 MiB
// logo has not even been sent yet, gets its 404 or 403 at once.
func TestLocation_ARefusedCallersLogoIsNotRead(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	id := w.createBusiness("owner")
	s.bdo("POST", "/business/"+id+"/members", w.token("owner"), map[string]string{"subject": "staff", "role": "staff"}).data(t, 201, "Member added successfully")
	loc := s.bdo("POST", "/business/location/"+id+"/", w.token("owner"), locationForm(t, false, map[string]string{"name": "Main"}, nil, nil, "", "")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"]
	update := fmt.Sprintf("/business/location/%v/update", loc)

	logo := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 5<<20-8)...)
	f := locationForm(t, false, map[string]string{"name": "Mine now"}, nil, logo, "logo.png", "image/png")
	form, err := io.ReadAll(f.body)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, method, path, sub string
		status                  int
		code                    string
	}{
		{"stranger creates", "POST", "/business/location/" + id + "/", "mallory", 404, "business_not_found"},
		{"staff creates", "POST", "/business/location/" + id + "/", "staff", 403, "insufficient_role"},
		{"stranger updates", "PUT", update, "mallory", 404, "location_not_found"},
		{"staff updates", "PUT", update, "staff", 403, "insufficient_role"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The first 64 KiB go out; the rest waits for the answer, which
			// must come without it (the test's deadline only bounds a
			// failing run).
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			pr, pw := io.Pipe()
			answered := make(chan struct{})
			go func() {
				pw.Write(form[:64<<10])
				select {
				case <-answered:
				case <-ctx.Done():
				}
				pw.CloseWithError(io.ErrClosedPipe)
			}()
			req, _ := http.NewRequestWithContext(ctx, tt.method, s.base+tt.path, pr)
			req.Header.Set("Authorization", "Bearer "+w.token(tt.sub))
			req.Header.Set("user-type", "business")
			req.Header.Set("Content-Type", f.ct)
			resp, err := http.DefaultClient.Do(req)
			close(answered)
			if err != nil {
				t.Fatalf("no answer before the logo was sent: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), `"code":"`+tt.code+`"`) {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, tt.status, tt.code)
			}
		})
	}
	if n := w.count("business_locations"); n != 1 {
		t.Fatalf("%d locations, want the owner's one", n)
	}
}
