package test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
)

var pdf = append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("stream of a scanned referral letter\n"), 6000)...) // ~210 KB: four segments

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestBlob_PlainLifecycle(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	alice := w.token("alice")

	r := s.upload(alice, fileFields("Referral letter.pdf", "application/pdf", pdf, field{"containerName", "documents"}, field{"practiceId", "pr-9"})...)
	if r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	dto := r.json(t)
	id := int64(dto["id"].(float64))
	if dto["containerName"] != "documents" || dto["originalFilename"] != "Referral letter.pdf" || dto["contentType"] != "application/pdf" ||
		dto["fileSize"] != float64(len(pdf)) || dto["isEncrypted"] != false || dto["encryptionKeyId"] != nil || dto["uploadedBy"] != "alice" ||
		dto["businessLocationId"] != nil || dto["practiceId"] != "pr-9" || dto["sha256"] != sha(pdf) {
		t.Fatalf("dto %v", dto)
	}
	name := dto["blobName"].(string)
	if strings.Contains(name, "Referral") || !bytes.Equal(w.object("documents", name), pdf) {
		t.Fatal("stored object is not the upload under a generated name")
	}

	if m := s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", id), alice, nil); m.status != 200 || m.json(t)["sha256"] != sha(pdf) {
		t.Fatalf("metadata: %d %s", m.status, m.body)
	}

	d := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), alice, nil)
	if d.status != 200 || !bytes.Equal(d.body, pdf) {
		t.Fatalf("download: %d, %d bytes", d.status, len(d.body))
	}
	for k, v := range map[string]string{
		"Content-Type":           "application/pdf",
		"Content-Length":         fmt.Sprint(len(pdf)),
		"Content-Disposition":    "attachment; filename*=UTF-8''Referral%20letter.pdf",
		"ETag":                   `"` + sha(pdf) + `"`,
		"Cache-Control":          "private, no-store",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := d.header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if _, err := time.Parse(http.TimeFormat, d.header.Get("Last-Modified")); err != nil {
		t.Errorf("Last-Modified %q", d.header.Get("Last-Modified"))
	}

	p := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), alice, nil, "Range", "bytes=70000-70099")
	if p.status != 206 || !bytes.Equal(p.body, pdf[70000:70100]) || p.header.Get("Content-Range") != fmt.Sprintf("bytes 70000-70099/%d", len(pdf)) {
		t.Fatalf("range: %d %q", p.status, p.header.Get("Content-Range"))
	}
	if u := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), alice, nil, "Range", fmt.Sprintf("bytes=%d-", len(pdf))); u.status != 416 || u.errorCode(t) != "range_not_satisfiable" {
		t.Fatalf("unsatisfiable range: %d", u.status)
	}

	del := s.do("DELETE", fmt.Sprintf("/cloud-blob/%d", id), alice, nil)
	if del.status != 200 || string(bytes.TrimSpace(del.body)) != `{"message":"File deleted successfully"}` {
		t.Fatalf("delete: %d %s", del.status, del.body)
	}
	if w.rows() != 0 || w.objects() != 0 {
		t.Fatal("delete left a row or an object")
	}
	if m := s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", id), alice, nil); m.status != 404 || m.errorCode(t) != "blob_not_found" {
		t.Fatalf("metadata after delete: %d", m.status)
	}
}

func TestBlob_EncryptedAtRestDecryptedOnDownload(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	alice := w.token("alice")

	r := s.upload(alice, fileFields("r.pdf", "application/pdf", pdf, field{"isEncrypted", "true"})...)
	if r.status != 201 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	dto := r.json(t)
	id := int64(dto["id"].(float64))
	if dto["isEncrypted"] != true || dto["encryptionKeyId"] != "k1" || dto["sha256"] != sha(pdf) || dto["fileSize"] != float64(len(pdf)) {
		t.Fatalf("dto %v", dto)
	}
	stored := w.object("uploads", dto["blobName"].(string))
	if bytes.Contains(stored, []byte("referral letter")) || bytes.Contains(stored, pdf[:16]) || len(stored) <= len(pdf) {
		t.Fatal("plaintext in the store")
	}
	if d := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), alice, nil); d.status != 200 || !bytes.Equal(d.body, pdf) || d.header.Get("ETag") != `"`+sha(pdf)+`"` {
		t.Fatalf("download: %d", d.status)
	}
	for _, rg := range [][2]int{{0, 0}, {65530, 65545}, {131072, 200000}, {len(pdf) - 3, len(pdf) - 1}} {
		p := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), alice, nil, "Range", fmt.Sprintf("bytes=%d-%d", rg[0], rg[1]))
		if p.status != 206 || !bytes.Equal(p.body, pdf[rg[0]:rg[1]+1]) {
			t.Fatalf("range %v: %d, %d bytes", rg, p.status, len(p.body))
		}
	}
	if p := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), alice, nil, "Range", "bytes=-10"); p.status != 206 || !bytes.Equal(p.body, pdf[len(pdf)-10:]) {
		t.Fatalf("suffix range: %d", p.status)
	}
}

func TestBlob_PreviousKeyStillDecryptsAfterRotation(t *testing.T) {
	w := newWorld(t, withS3)
	old := w.start(nil)
	alice := w.token("alice")
	r := old.upload(alice, fileFields("r.pdf", "application/pdf", pdf, field{"isEncrypted", "true"})...)
	if r.status != 201 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	id := int64(r.json(t)["id"].(float64))

	rotated := w.start(func(c *app.Config) {
		c.BlobKeys = w.keyRing("k2", key(2), map[string][]byte{"k1": key(1)})
	})
	if d := rotated.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), alice, nil); d.status != 200 || !bytes.Equal(d.body, pdf) {
		t.Fatalf("download after rotation: %d", d.status)
	}
	if n := rotated.upload(alice, fileFields("n.pdf", "application/pdf", pdf, field{"isEncrypted", "true"})...); n.json(t)["encryptionKeyId"] != "k2" {
		t.Fatalf("new upload not under the new key: %s", n.body)
	}
	forgotten := w.start(func(c *app.Config) { c.BlobKeys = w.keyRing("k3", key(3), nil) })
	if d := forgotten.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), alice, nil); d.status != 500 || d.errorCode(t) != "internal_error" {
		t.Fatalf("download without the old key: %d %s", d.status, d.body)
	}
}

func TestBlob_TamperedCiphertextIsNeverServed(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	alice := w.token("alice")
	r := s.upload(alice, fileFields("r.pdf", "application/pdf", pdf, field{"isEncrypted", "true"})...)
	dto := r.json(t)
	id, name := int64(dto["id"].(float64)), dto["blobName"].(string)
	good := w.object("uploads", name)
	seg := 64<<10 + 16

	cases := map[string][]byte{
		"bit flipped in the first segment": flip(good, 100),
		"bit flipped in the third segment": flip(good, 2*seg+5),
		"truncated at a segment boundary":  good[:2*seg],
		"last segment dropped":             good[:3*seg],
		"segments swapped":                 concat(good[seg:2*seg], good[:seg], good[2*seg:]),
		"segment appended":                 concat(good, good[:seg]),
	}
	for what, bad := range cases {
		t.Run(what, func(t *testing.T) {
			w.replaceObject("uploads", name, bad)
			req, _ := http.NewRequest("GET", fmt.Sprintf("%s/cloud-blob/download/%d", s.base, id), nil)
			req.Header.Set("Authorization", "Bearer "+alice)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return // refused before any byte: fine
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if resp.StatusCode == 200 && err == nil {
				t.Fatalf("served a whole tampered file (%d bytes)", len(got))
			}
			if resp.StatusCode == 200 && !bytes.Equal(got, pdf[:len(got)]) {
				t.Fatal("served bytes that are not the plaintext")
			}
			if resp.StatusCode != 200 && resp.StatusCode != 500 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x20
	return c
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestBlob_BadInputIsRefusedAndLeavesNothing(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	noKey := w.start(func(c *app.Config) { c.BlobKeys = nil })
	alice := w.token("alice")
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 1000)...)

	tests := []struct {
		name   string
		srv    *server
		fields []field
		status int
		code   string
	}{
		{"missing file part", s, []field{{"originalFilename", "a.png"}, {"contentType", "image/png"}, {"fileSize", "4"}}, 400, "file_missing"},
		{"disallowed type", s, fileFields("run.exe", "application/octet-stream", []byte("MZ\x90\x00")), 400, "file_type_not_allowed"},
		{"content type disagrees with extension", s, fileFields("a.png", "image/jpeg", png), 400, "file_type_not_allowed"},
		{"leading bytes disagree", s, fileFields("a.png", "image/png", []byte("%PDF-1.4 not a png")), 400, "file_type_not_allowed"},
		{"fileSize larger than the bytes", s, append(fileFields("a.png", "image/png", png)[:2], field{"fileSize", "1001"}, field{"file", string(png)}), 400, "file_size_mismatch"},
		{"fileSize smaller than the bytes", s, append(fileFields("a.png", "image/png", png)[:2], field{"fileSize", "1007"}, field{"file", string(png)}), 400, "file_size_mismatch"},
		{"encrypted fileSize mismatch", s, append(fileFields("a.png", "image/png", png)[:2], field{"fileSize", "999"}, field{"isEncrypted", "true"}, field{"file", string(png)}), 400, "file_size_mismatch"},
		{"declared size over the limit", s, append(fileFields("a.png", "image/png", png)[:2], field{"fileSize", fmt.Sprint(5 << 20)}, field{"file", string(png)}), 413, "file_too_large"},
		{"body over the limit", s, fileFields("a.png", "image/png", append(png, make([]byte, 6<<20)...)), 413, "file_too_large"},
		{"bad container", s, fileFields("a.png", "image/png", png, field{"containerName", "../etc"}), 400, "invalid_container"},
		{"encrypted without a key", noKey, fileFields("a.png", "image/png", png, field{"isEncrypted", "true"}), 400, "encryption_key_missing"},
		{"part after the file", s, append(fileFields("a.png", "image/png", png), field{"practiceId", "late"}), 400, "part_after_file"},
		{"file before its metadata", s, []field{{"file", string(png)}, {"originalFilename", "a.png"}, {"contentType", "image/png"}, {"fileSize", fmt.Sprint(len(png))}}, 400, "part_after_file"},
		{"unknown field", s, fileFields("a.png", "image/png", png, field{"owner", "me"}), 400, "unknown_field"},
		{"location id not a number", s, fileFields("a.png", "image/png", png, field{"businessLocationId", "main"}), 400, "invalid_business_location_id"},
		{"location of nobody", s, fileFields("a.png", "image/png", png, field{"businessLocationId", "424242"}), 404, "location_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.srv.upload(alice, tt.fields...)
			if code := r.errorCode(t); r.status != tt.status || code != tt.code {
				t.Fatalf("got %d %s, want %d %s (%s)", r.status, code, tt.status, tt.code, r.body)
			}
			if w.rows() != 0 || w.objects() != 0 {
				t.Fatalf("left %d rows and %d objects", w.rows(), w.objects())
			}
		})
	}

	body, ct := multipartBody(t, fileFields("a.png", "image/png", png)...)
	if r := s.do("POST", "/cloud-blob/upload", alice, body, "Content-Type", strings.Replace(ct, "multipart/form-data", "application/json", 1)); r.status != 415 {
		t.Fatalf("wrong content type: %d", r.status)
	}
	for _, p := range []string{"/cloud-blob/metadata/abc", "/cloud-blob/download/1.5", "/cloud-blob/metadata/-3"} {
		if r := s.do("GET", p, alice, nil); r.status != 400 || r.errorCode(t) != "invalid_id" {
			t.Errorf("%s: %d", p, r.status)
		}
	}
	if r := s.do("DELETE", "/cloud-blob/77", alice, nil); r.status != 404 || r.errorCode(t) != "blob_not_found" {
		t.Errorf("unknown id: %d", r.status)
	}
}

func TestBlob_TokensAreChecked(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	expired := w.issuer.Token(t, "alice", audience, -time.Minute)
	claims := w.issuer.Claims("alice", audience, time.Hour)
	claims["nbf"] = time.Now().Add(time.Hour).Unix()
	early := w.issuer.Sign(t, claims)
	noSub := w.issuer.Claims("", audience, time.Hour)
	delete(noSub, "sub")
	for what, tok := range map[string]string{
		"no token":       "",
		"garbage":        "not-a-jwt",
		"expired":        expired,
		"wrong audience": w.issuer.Token(t, "alice", "someone-else", time.Hour),
		"not yet valid":  early,
		"no subject":     w.issuer.Sign(t, noSub),
	} {
		for _, p := range []string{"/cloud-blob/metadata/1", "/cloud-blob/download/1"} {
			if r := s.do("GET", p, tok, nil); r.status != 401 || r.errorCode(t) == "" {
				t.Errorf("%s on %s: %d", what, p, r.status)
			}
		}
		if r := s.upload(tok, fileFields("a.txt", "text/plain", []byte("hi"))...); r.status != 401 {
			t.Errorf("%s on upload: %d", what, r.status)
		}
	}
	if w.rows() != 0 {
		t.Fatal("an unauthenticated upload was stored")
	}
}

func TestBlob_OwnershipHidesOthersFiles(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	alice, bob, owner := w.token("alice"), w.token("bob"), w.token("owner")
	loc := w.seedLocation("owner")

	mine := s.upload(alice, fileFields("a.txt", "text/plain", []byte("alice's notes"))...).json(t)
	id := int64(mine["id"].(float64))
	for _, r := range []response{
		s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", id), bob, nil),
		s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", id), bob, nil),
		s.do("DELETE", fmt.Sprintf("/cloud-blob/%d", id), bob, nil),
		s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", id), owner, nil),
	} {
		if r.status != 404 || r.errorCode(t) != "blob_not_found" {
			t.Fatalf("another caller got %d %s", r.status, r.body)
		}
	}
	if w.rows() != 1 || w.objects() != 1 {
		t.Fatal("a refused delete removed something")
	}

	if r := s.upload(alice, fileFields("a.txt", "text/plain", []byte("x"), field{"businessLocationId", fmt.Sprint(loc)})...); r.status != 404 || r.errorCode(t) != "location_not_found" {
		t.Fatalf("upload to someone else's location: %d", r.status)
	}
	// The business owner reads what its location holds, also files others uploaded there.
	r := s.upload(owner, fileFields("logo.txt", "text/plain", []byte("owner file"), field{"businessLocationId", fmt.Sprint(loc)})...)
	if r.status != 201 || r.json(t)["businessLocationId"] != fmt.Sprint(loc) {
		t.Fatalf("owner upload: %d %s", r.status, r.body)
	}
	ownerID := int64(r.json(t)["id"].(float64))
	if _, err := w.db.Exec(t.Context(), "UPDATE blob_entries SET uploaded_by = 'staff' WHERE id = $1", ownerID); err != nil {
		t.Fatal(err)
	}
	if d := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", ownerID), owner, nil); d.status != 200 || string(d.body) != "owner file" {
		t.Fatalf("owner download: %d", d.status)
	}
	if d := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", ownerID), alice, nil); d.status != 404 {
		t.Fatalf("alice read the business's file: %d", d.status)
	}
}

func TestOps_HealthReadinessMetrics(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	if r := s.do("GET", "/healthz", "", nil); r.status != 200 {
		t.Fatalf("healthz %d", r.status)
	}
	if r := s.do("GET", "/readyz", "", nil); r.status != 200 {
		t.Fatalf("readyz %d %s", r.status, r.body)
	}
	s.upload(w.token("alice"), fileFields("a.txt", "text/plain", []byte("hello"))...)
	m := s.do("GET", "/metrics", "", nil)
	for _, want := range []string{
		`carebridge_http_requests_total{method="POST",route="/cloud-blob/upload",status="201"} 1`,
		`carebridge_blob_uploaded_bytes_total 5`,
		`carebridge_http_request_duration_seconds_bucket{method="GET",route="/readyz"`,
	} {
		if !strings.Contains(string(m.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
