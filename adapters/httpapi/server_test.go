package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/storage"
)

// tokens accepts "good-<subject>" and refuses anything else.
type tokens struct{}

func (tokens) Authenticate(_ context.Context, token string) (core.Actor, error) {
	if sub, ok := strings.CutPrefix(token, "good-"); ok {
		return core.Actor{Subject: sub}, nil
	}
	return core.Actor{}, &core.Error{Kind: core.KindUnauthenticated, Code: "invalid_token", Message: "Invalid bearer token"}
}

func newTestServer(t *testing.T, st *StorageMock, cors ...string) *Server {
	t.Helper()
	return New(Config{
		Log:                slog.New(slog.NewTextHandler(io.Discard, nil)),
		Auth:               tokens{},
		Storage:            st,
		Registry:           prometheus.NewRegistry(),
		Ready:              func(context.Context) error { return nil },
		MaxUploadBytes:     1 << 20,
		CORSAllowedOrigins: cors,
	})
}

type part struct{ name, value string }

// form builds a multipart body with the parts in order; a part named
// "file" carries value as its bytes.
func form(t *testing.T, parts ...part) (io.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.name == "file" {
			w, err = mw.CreateFormFile("file", "client-name.png")
		} else {
			w, err = mw.CreateFormField(p.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, p.value)
	}
	mw.Close()
	return &buf, mw.FormDataContentType()
}

func do(t *testing.T, s http.Handler, method, path string, body io.Reader, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, body)
	r.Header.Set("Authorization", "Bearer good-alice")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			r.Header.Del(header[i])
		} else {
			r.Header.Set(header[i], header[i+1])
		}
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func errEnvelope(t *testing.T, w *httptest.ResponseRecorder) errorBody {
	t.Helper()
	var e errorBody
	raw := w.Body.Bytes()
	if err := json.Unmarshal(raw, &e); err != nil || e.Status != "error" || e.Code == "" || e.Message == "" || !bytes.Contains(raw, []byte(`"data":null`)) {
		t.Fatalf("not an error envelope: %s", raw)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error content type %q", ct)
	}
	return e
}

var sample = storage.Blob{
	ID: 5, Name: "0123abcd", Container: storage.ContainerImages, OriginalFilename: "scan.png",
	ContentType: "image/png", Size: 9, UploadedBy: "alice", SHA256: "feed",
	CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
}

func TestUpload_PassesTheFormToTheCoreAsAStream(t *testing.T) {
	var got storage.UploadInput
	var content []byte
	st := &StorageMock{UploadFunc: func(ctx context.Context, in storage.UploadInput) (storage.Blob, error) {
		got = in
		var err error
		content, err = io.ReadAll(in.Body)
		if a, _ := core.ActorFrom(ctx); a.Subject != "alice" {
			t.Errorf("actor %q", a.Subject)
		}
		return sample, err
	}}
	body, ct := form(t,
		part{"originalFilename", "scan.png"}, part{"contentType", "image/png"}, part{"fileSize", "9"},
		part{"isEncrypted", "true"}, part{"businessLocationId", "7"}, part{"practiceId", "p-1"},
		part{"containerName", "images"}, part{"file", "\x89PNG-data"})
	w := do(t, newTestServer(t, st), "POST", "/cloud-blob/upload", body, "Content-Type", ct)
	if w.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	want := storage.UploadInput{OriginalFilename: "scan.png", ContentType: "image/png", FileSize: 9, Encrypted: true,
		Container: "images", BusinessLocationID: "7", PracticeID: "p-1"}
	got.Body = nil
	if got != want || string(content) != "\x89PNG-data" {
		t.Fatalf("core got %+v with %q", got, content)
	}
	var dto map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &dto); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "blobName", "containerName", "originalFilename", "contentType", "fileSize", "isEncrypted",
		"encryptionKeyId", "uploadedBy", "businessLocationId", "practiceId", "sha256", "createdAt", "updatedAt"} {
		if _, ok := dto[k]; !ok {
			t.Errorf("BlobResponseDto lacks %s", k)
		}
	}
	if dto["encryptionKeyId"] != nil || dto["fileSize"] != 9.0 || dto["createdAt"] != "2026-01-02T03:04:05Z" {
		t.Fatalf("dto %v", dto)
	}
}

func TestUpload_RefusesBadForms(t *testing.T) {
	valid := []part{{"originalFilename", "a.png"}, {"contentType", "image/png"}, {"fileSize", "4"}}
	with := func(extra ...part) []part { return append(append([]part{}, valid...), extra...) }
	tests := []struct {
		name   string
		parts  []part
		ct     string
		status int
		code   string
	}{
		{"json instead of a form", nil, "application/json", 415, "unsupported_media_type"},
		{"form without boundary", nil, "multipart/form-data", 415, "unsupported_media_type"},
		{"missing file part", valid, "", 400, "file_missing"},
		{"part after the file", with(part{"file", "\x89PNG"}, part{"practiceId", "x"}), "", 400, "part_after_file"},
		{"unknown field", with(part{"isEncrpyted", "true"}, part{"file", "\x89PNG"}), "", 400, "unknown_field"},
		{"field twice", with(part{"fileSize", "4"}, part{"file", "\x89PNG"}), "", 400, "duplicate_field"},
		{"file size not a number", []part{{"originalFilename", "a.png"}, {"contentType", "image/png"}, {"fileSize", "four"}, {"file", "\x89PNG"}}, "", 400, "invalid_file_size"},
		{"file size missing", []part{{"originalFilename", "a.png"}, {"contentType", "image/png"}, {"file", "\x89PNG"}}, "", 400, "missing_field"},
		{"file before its metadata", []part{{"file", "\x89PNG"}, {"originalFilename", "a.png"}, {"contentType", "image/png"}, {"fileSize", "4"}}, "", 400, "part_after_file"},
		{"file alone", []part{{"file", "\x89PNG"}}, "", 400, "missing_field"},
		{"isEncrypted not a boolean", with(part{"isEncrypted", "yes"}, part{"file", "\x89PNG"}), "", 400, "invalid_field"},
		{"field too long", with(part{"practiceId", strings.Repeat("x", 5000)}, part{"file", "\x89PNG"}), "", 400, "invalid_field"},
		{"body over the limit", with(part{"file", strings.Repeat("x", 2<<20+10)}), "", 413, "file_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The core reads the file as the real one does; its read error is the answer.
			st := &StorageMock{UploadFunc: func(ctx context.Context, in storage.UploadInput) (storage.Blob, error) {
				if _, err := io.Copy(io.Discard, in.Body); err != nil {
					return storage.Blob{}, err
				}
				return sample, nil
			}}
			body, ct := form(t, tt.parts...)
			if tt.ct != "" {
				ct = tt.ct
			}
			w := do(t, newTestServer(t, st), "POST", "/cloud-blob/upload", body, "Content-Type", ct)
			if e := errEnvelope(t, w); w.Code != tt.status || e.Code != tt.code {
				t.Fatalf("got %d %s (%s), want %d %s", w.Code, e.Code, e.Message, tt.status, tt.code)
			}
		})
	}
}

// A newcomer who sends the file first is told the rule, not that a field
// they did send is missing.
func TestUpload_FileBeforeMetadataNamesTheOrder(t *testing.T) {
	tests := []struct {
		name  string
		parts []part
		code  string
		say   []string
	}{
		{"metadata after the file", []part{{"file", "\x89PNG"}, {"originalFilename", "a.png"}, {"contentType", "image/png"}, {"fileSize", "4"}},
			"part_after_file", []string{`"originalFilename" comes after the file part`, "(originalFilename, contentType, fileSize"}},
		{"fileSize after the file", []part{{"originalFilename", "a.png"}, {"contentType", "image/png"}, {"file", "\x89PNG"}, {"fileSize", "4"}},
			"part_after_file", []string{`"fileSize" comes after the file part`, "file part last"}},
		{"fileSize never sent", []part{{"originalFilename", "a.png"}, {"contentType", "image/png"}, {"file", "\x89PNG"}},
			"missing_field", []string{"fileSize is required", "metadata parts before the file part"}},
		{"nothing but the file", []part{{"file", "\x89PNG"}},
			"missing_field", []string{"originalFilename, contentType and fileSize are required", "metadata parts before the file part"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &StorageMock{} // never reached
			body, ct := form(t, tt.parts...)
			w := do(t, newTestServer(t, st), "POST", "/cloud-blob/upload", body, "Content-Type", ct)
			e := errEnvelope(t, w)
			if w.Code != 400 || e.Code != tt.code {
				t.Fatalf("got %d %s (%s), want 400 %s", w.Code, e.Code, e.Message, tt.code)
			}
			for _, s := range tt.say {
				if !strings.Contains(e.Message, s) {
					t.Errorf("message %q does not say %q", e.Message, s)
				}
			}
			if len(st.UploadCalls()) != 0 {
				t.Error("the core was called")
			}
		})
	}
}

func TestAuth_RefusesMissingOrBadTokens(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	for _, h := range []string{"", "Bearer", "Bearer ", "Basic dXNlcjpw", "Bearer bad-token", "good-alice"} {
		w := do(t, s, "GET", "/cloud-blob/metadata/1", nil, "Authorization", h)
		if e := errEnvelope(t, w); w.Code != 401 || w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: got %d %s", h, w.Code, e.Code)
		}
	}
	// Health, readiness and metrics need no token.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if w := do(t, s, "GET", p, nil, "Authorization", ""); w.Code != 200 {
			t.Errorf("%s: %d", p, w.Code)
		}
	}
}

func TestErrors_KindsMapToStatusesInTheEnvelope(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{storage.ErrBlobNotFound, 404, "blob_not_found"},
		{storage.ErrInvalidContainer, 400, "invalid_container"},
		{storage.ErrFileTooLarge, 413, "file_too_large"},
		{storage.ErrBlobCorrupt, 500, "internal_error"},
		{fmt.Errorf("select: %w", errors.New("pq: relation blob_entries does not exist")), 500, "internal_error"},
		{&core.Error{Kind: core.KindConflict, Code: "day_taken", Message: "Monday already has hours"}, 409, "day_taken"},
	}
	for _, tt := range tests {
		st := &StorageMock{MetadataFunc: func(context.Context, int64) (storage.Blob, error) { return storage.Blob{}, tt.err }}
		w := do(t, newTestServer(t, st), "GET", "/cloud-blob/metadata/3", nil, "X-Request-Id", "req-123")
		e := errEnvelope(t, w)
		if w.Code != tt.status || e.Code != tt.code {
			t.Errorf("%v: got %d %s, want %d %s", tt.err, w.Code, e.Code, tt.status, tt.code)
		}
		if strings.Contains(w.Body.String(), "relation") || strings.Contains(w.Body.String(), "pq:") {
			t.Errorf("internal detail leaked: %s", w.Body)
		}
		if w.Header().Get("X-Request-Id") != "req-123" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("headers %v", w.Header())
		}
	}
}

func TestIDs_NonNumericIs400(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	for _, p := range []string{"/cloud-blob/metadata/abc", "/cloud-blob/download/-1", "/cloud-blob/metadata/0", "/cloud-blob/metadata/99999999999999999999"} {
		w := do(t, s, "GET", p, nil)
		if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_id" {
			t.Errorf("%s: %d %s", p, w.Code, e.Code)
		}
	}
	if w := do(t, s, "DELETE", "/cloud-blob/x1", nil); w.Code != 400 {
		t.Errorf("delete x1: %d", w.Code)
	}
}

func TestRoutes_UnknownAndWrongMethod(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	if w := do(t, s, "GET", "/nope", nil); w.Code != 404 || errEnvelope(t, w).Code != "route_not_found" {
		t.Errorf("unknown route: %d", w.Code)
	}
	if w := do(t, s, "PUT", "/cloud-blob/upload", nil); w.Code != 405 || errEnvelope(t, w).Code != "method_not_allowed" {
		t.Errorf("wrong method: %d", w.Code)
	}
}

func download(body string, partial bool, start int64) *storage.Download {
	b := sample
	b.Size = 9
	b.OriginalFilename = "résumé final;\".png"
	return &storage.Download{Blob: b, Start: start, Length: int64(len(body)), Partial: partial, Body: io.NopCloser(strings.NewReader(body))}
}

func TestDownload_SendsTheContractHeaders(t *testing.T) {
	var asked *storage.ByteRange
	st := &StorageMock{DownloadFunc: func(_ context.Context, id int64, r *storage.ByteRange) (*storage.Download, error) {
		asked = r
		if r != nil {
			return download("NG-d", true, 2), nil
		}
		return download("\x89PNG-data", false, 0), nil
	}}
	s := newTestServer(t, st)
	w := do(t, s, "GET", "/cloud-blob/download/5", nil)
	h := w.Header()
	if w.Code != 200 || w.Body.String() != "\x89PNG-data" || asked != nil {
		t.Fatalf("got %d %q", w.Code, w.Body)
	}
	want := map[string]string{
		"Content-Type":           "image/png",
		"Content-Length":         "9",
		"Content-Disposition":    "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9%20final%3B%22.png",
		"ETag":                   `"feed"`,
		"Last-Modified":          "Fri, 02 Jan 2026 03:04:05 GMT",
		"Cache-Control":          "private, no-store",
		"X-Content-Type-Options": "nosniff",
		"Accept-Ranges":          "bytes",
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s: got %q, want %q", k, h.Get(k), v)
		}
	}
	w = do(t, s, "GET", "/cloud-blob/download/5", nil, "Range", "bytes=2-5")
	if w.Code != 206 || w.Body.String() != "NG-d" || w.Header().Get("Content-Range") != "bytes 2-5/9" || *asked != (storage.ByteRange{Start: 2, End: 5}) {
		t.Fatalf("range: %d %q %q %+v", w.Code, w.Body, w.Header().Get("Content-Range"), asked)
	}
}

func TestDownload_UnsatisfiableRangeIs416(t *testing.T) {
	st := &StorageMock{
		DownloadFunc: func(context.Context, int64, *storage.ByteRange) (*storage.Download, error) {
			return nil, storage.ErrRangeNotSatisfiable
		},
		MetadataFunc: func(context.Context, int64) (storage.Blob, error) { return sample, nil },
	}
	w := do(t, newTestServer(t, st), "GET", "/cloud-blob/download/5", nil, "Range", "bytes=100-")
	if e := errEnvelope(t, w); w.Code != 416 || e.Code != "range_not_satisfiable" || w.Header().Get("Content-Range") != "bytes */9" {
		t.Fatalf("got %d %s %q", w.Code, e.Code, w.Header().Get("Content-Range"))
	}
}

type failingBody struct{ r io.Reader }

func (f *failingBody) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, storage.ErrBlobCorrupt
	}
	return n, err
}
func (f *failingBody) Close() error { return nil }

func TestDownload_CorruptionMidStreamBreaksTheTransfer(t *testing.T) {
	st := &StorageMock{DownloadFunc: func(context.Context, int64, *storage.ByteRange) (*storage.Download, error) {
		d := download("", false, 0)
		d.Length = 1 << 20
		d.Body = &failingBody{strings.NewReader(strings.Repeat("a", 100<<10))}
		return d, nil
	}}
	srv := httptest.NewServer(newTestServer(t, st))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/cloud-blob/download/5", nil)
	req.Header.Set("Authorization", "Bearer good-alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil || n >= 1<<20 {
		t.Fatalf("client read %d bytes and err %v; want a broken transfer", n, err)
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		h    string
		want *storage.ByteRange
	}{
		{"", nil},
		{"bytes=0-0", &storage.ByteRange{Start: 0, End: 0}},
		{"bytes=10-", &storage.ByteRange{Start: 10, End: -1}},
		{"bytes=-20", &storage.ByteRange{Suffix: 20}},
		{"bytes=5-2", nil},
		{"bytes=0-1,4-5", nil},
		{"items=0-1", nil},
		{"bytes=a-b", nil},
		{"bytes=-0", nil},
		{"bytes=-", nil},
	}
	for _, tt := range tests {
		got := parseRange(tt.h)
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("parseRange(%q) = %+v, want %+v", tt.h, got, tt.want)
		}
	}
}

func TestCORS_OnlyExactOrigins(t *testing.T) {
	st := &StorageMock{MetadataFunc: func(context.Context, int64) (storage.Blob, error) { return sample, nil }}
	closed := newTestServer(t, st)
	if w := do(t, closed, "GET", "/cloud-blob/metadata/5", nil, "Origin", "https://app.example"); w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS header without configured origins")
	}
	open := newTestServer(t, st, "https://app.example")
	if w := do(t, open, "GET", "/cloud-blob/metadata/5", nil, "Origin", "https://app.example"); w.Header().Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatal("allowed origin not answered")
	}
	if w := do(t, open, "GET", "/cloud-blob/metadata/5", nil, "Origin", "https://evil.example"); w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("foreign origin echoed")
	}
	w := do(t, open, "OPTIONS", "/cloud-blob/upload", nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	if w.Code != 204 || !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", w.Code, w.Header())
	}
}

func TestRequestID_BadClientValueIsReplaced(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	w := do(t, s, "GET", "/healthz", nil, "X-Request-Id", "evil\r\nvalue<script>")
	if id := w.Header().Get("X-Request-Id"); id == "" || strings.ContainsAny(id, "<\r\n") {
		t.Fatalf("request id %q", id)
	}
}

// FuzzReadUploadForm: any multipart body yields an upload or a client
// error; never a panic, never an internal error.
func FuzzReadUploadForm(f *testing.F) {
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"fileSize\"\r\n\r\n3\r\n--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc\r\n--B--\r\n"))
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc\r\n--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--B--\r\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := readUploadForm(multipart.NewReader(bytes.NewReader(body), "B"))
		if err == nil {
			if in.Body == nil {
				t.Fatal("no error and no file")
			}
			_, err = io.Copy(io.Discard, in.Body)
		}
		if err != nil && core.KindOf(bodyErr(err)) != core.KindInvalid {
			t.Fatalf("non-client error %v", err)
		}
	})
}

func TestObserve_LogsAndCountsEachRequestByRoutePattern(t *testing.T) {
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	s := New(Config{
		Log:      slog.New(slog.NewJSONHandler(&logs, nil)),
		Auth:     tokens{},
		Storage:  &StorageMock{MetadataFunc: func(context.Context, int64) (storage.Blob, error) { return storage.Blob{}, storage.ErrBlobNotFound }},
		Registry: reg,
		Ready:    func(context.Context) error { return nil },
	})
	do(t, s, "GET", "/cloud-blob/metadata/7", nil, "X-Request-Id", "req-7")
	do(t, s, "GET", "/cloud-blob/metadata/8", nil)
	do(t, s, "BREW", "/teapot", nil) // a method no route knows must not become a label

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("want 3 access-log lines, got %d:\n%s", len(lines), logs.String())
	}
	first := lines[0]
	want := map[string]any{"level": "INFO", "msg": "request", "request_id": "req-7", "method": "GET", "route": "/cloud-blob/metadata/{id}", "status": 404.0}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("log field %s = %v, want %v", k, first[k], v)
		}
	}
	if _, ok := first["duration_ms"].(float64); first["bytes"].(float64) <= 0 || !ok || first["duration"] != nil || first["time"] == nil {
		t.Errorf("log line lacks bytes, duration_ms (a number) or time: %v", first)
	}
	if lines[2]["route"] != "unmatched" || lines[2]["status"] != 404.0 {
		t.Errorf("unmatched request logged as %v", lines[2])
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "carebridge_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var key []string
			for _, l := range m.GetLabel() {
				key = append(key, l.GetName()+"="+l.GetValue())
			}
			counts[strings.Join(key, ",")] = m.GetCounter().GetValue()
		}
	}
	wantCounts := map[string]float64{
		"method=GET,route=/cloud-blob/metadata/{id},status=404": 2,
		"method=OTHER,route=unmatched,status=404":               1,
	}
	if fmt.Sprint(counts) != fmt.Sprint(wantCounts) {
		t.Errorf("request counts %v, want %v", counts, wantCounts)
	}
}

func TestErrors_ClientThatHungUpIsNotAnInternalError(t *testing.T) {
	var logs bytes.Buffer
	st := &StorageMock{MetadataFunc: func(ctx context.Context, _ int64) (storage.Blob, error) {
		<-ctx.Done()
		return storage.Blob{}, fmt.Errorf("select blob: %w", ctx.Err())
	}}
	s := New(Config{
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Auth: tokens{}, Storage: st,
		Registry: prometheus.NewRegistry(), Ready: func(context.Context) error { return nil },
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest("GET", "/cloud-blob/metadata/3", nil).WithContext(ctx)
	r.Header.Set("Authorization", "Bearer good-alice")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if e := errEnvelope(t, w); w.Code != 499 || e.Code != "client_closed_request" {
		t.Errorf("got %d %s, want 499 client_closed_request", w.Code, e.Code)
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), "client went away") {
		t.Errorf("a hang-up must be logged as such, not as an error:\n%s", logs.String())
	}

	// A cancellation the client did not cause (the request is live) stays
	// an internal error.
	st.MetadataFunc = func(context.Context, int64) (storage.Blob, error) { return storage.Blob{}, context.Canceled }
	if w := do(t, s, "GET", "/cloud-blob/metadata/3", nil); w.Code != 500 {
		t.Errorf("live request with a canceled error: got %d, want 500", w.Code)
	}
}
