// Package test holds the end-to-end tests: the real app on port 0 with real
// PostgreSQL, an OIDC issuer over HTTP and, for the tests that ask for it
// (newWorld(t, withS3)), a real S3-compatible server (versitygw), spoken to
// only through HTTP.
package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/oidctest"
	"github.com/carebridge/carebridge/test/pgtest"
	"github.com/carebridge/carebridge/test/s3test"
)

const audience = "carebridge-e2e"

// world is what the apps of one test share: a database, an issuer and a
// blob store: a directory (file://), or an S3 server with withS3.
type world struct {
	t          *testing.T
	dbURL      string
	db         *pgxpool.Pool
	blobConfig app.ObjectStore // the apps' blob store
	s3         s3.Config       // set by withS3
	raw        *awss3.Client   // set by withS3: the S3 server's client, behind the app's back
	issuer     *oidctest.Issuer
}

// worldOption adds to a world.
type worldOption func(*world)

// withS3 puts the world's blobs on a real S3 server (versitygw), started
// for this test, and gives the test a raw client to it (objects, object,
// replaceObject). Without it the apps store blobs in a temporary directory
// and no S3 server is started.
func withS3(w *world) {
	w.t.Helper()
	w.s3 = s3test.Start(w.t)
	cfg := w.s3
	w.blobConfig = app.ObjectStore{S3: &cfg}
	w.raw = awss3.New(awss3.Options{
		Region:       w.s3.Region,
		BaseEndpoint: aws.String("http://" + w.s3.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(w.s3.AccessKey, w.s3.SecretKey, ""),
	})
}

func newWorld(t *testing.T, opts ...worldOption) *world {
	t.Helper()
	w := &world{t: t, dbURL: pgtest.New(t), blobConfig: app.ObjectStore{Dir: t.TempDir()}, issuer: oidctest.New(t)}
	for _, o := range opts {
		o(w)
	}
	var err error
	w.db, err = pgxpool.New(context.Background(), w.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.db.Close)
	return w
}

// s3Client is the raw S3 client of a world made withS3.
func (w *world) s3Client() *awss3.Client {
	w.t.Helper()
	if w.raw == nil {
		w.t.Fatal("this test reads the S3 server behind the app's back: make its world with newWorld(t, withS3)")
	}
	return w.raw
}

// server is one running app.
type server struct {
	*world
	base string
	app  *app.App
	stop func() // shuts the app down as SIGTERM does (Run, then Close); idempotent
}

// key is a master key, base64.
func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// keyRing is the blob key ring of current (named id) and previous.
func (w *world) keyRing(id string, current []byte, previous map[string][]byte) *keyring.Ring {
	w.t.Helper()
	r, err := keyring.New(id, current, previous)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// start runs an app over the world's services; edit adjusts its config.
func (w *world) start(edit func(*app.Config)) *server {
	w.t.Helper()
	return w.startLogging(io.Discard, edit)
}

// startLogging is start with the app's JSON log (debug level) written to
// out.
func (w *world) startLogging(out io.Writer, edit func(*app.Config)) *server {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, w.config(edit), slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		cancel()
		w.t.Fatalf("start app: %v", err)
	}
	return w.run(ctx, cancel, a)
}

// config is the config of an app over the world's services, adjusted by
// edit.
func (w *world) config(edit func(*app.Config)) app.Config {
	cfg := app.Config{
		HTTPAddr:       "127.0.0.1:0",
		DatabaseURL:    w.dbURL,
		Objects:        w.blobConfig,
		BlobKeys:       w.keyRing("k1", key(1), nil),
		MaxUploadBytes: 4 << 20,
		OIDCIssuerURL:  w.issuer.URL(),
		OIDCAudience:   audience,
	}
	if edit != nil {
		edit(&cfg)
	}
	return cfg
}

// run serves a, built with ctx, until the test ends or its stop.
func (w *world) run(ctx context.Context, cancel context.CancelFunc, a *app.App) *server {
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			w.t.Errorf("app stopped with %v", err)
		}
		a.Close()
	})
	w.t.Cleanup(stop)
	return &server{world: w, base: "http://" + a.Addr(), app: a, stop: stop}
}

// staffScopes are the scopes of a member of staff (a dev token's).
const staffScopes = "user/Patient.rs user/Appointment.cruds"

// token is a member of staff's token for sub.
func (w *world) token(sub string) string { return w.scopedToken(sub, staffScopes) }

// scopedToken is a token for sub with the given scope claim ("" leaves it
// out).
func (w *world) scopedToken(sub, scope string) string {
	c := w.issuer.Claims(sub, audience, time.Hour)
	if scope != "" {
		c["scope"] = scope
	}
	return w.issuer.Sign(w.t, c)
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body not JSON: %q", r.status, r.body)
	}
	return m
}

// errorCode checks r is the contract's error envelope and returns its code.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	m := r.json(t)
	if m["status"] != "error" || m["data"] != nil || m["message"] == "" || r.header.Get("Content-Type") != "application/json" || r.header.Get("X-Request-Id") == "" {
		t.Fatalf("not an error envelope: %d %s", r.status, r.body)
	}
	code, _ := m["code"].(string)
	return code
}

func (s *server) do(method, path, token string, body io.Reader, header ...string) response {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	s.checkDocumented(req, resp, b)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// field is one form part; name "file" carries the file's bytes.
type field struct{ name, value string }

func multipartBody(t *testing.T, fields ...field) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		var w io.Writer
		var err error
		if f.name == "file" {
			w, err = mw.CreateFormFile("file", "ignored-client-name.bin")
		} else {
			w, err = mw.CreateFormField(f.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, f.value)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, mw.FormDataContentType()
}

func (s *server) upload(token string, fields ...field) response {
	s.t.Helper()
	body, ct := multipartBody(s.t, fields...)
	return s.do("POST", "/cloud-blob/upload", token, body, "Content-Type", ct)
}

// fileFields is a valid form for content named filename of type ct.
func fileFields(filename, ct string, content []byte, extra ...field) []field {
	f := []field{{"originalFilename", filename}, {"contentType", ct}, {"fileSize", fmt.Sprint(len(content))}}
	f = append(f, extra...)
	return append(f, field{"file", string(content)})
}

// rows counts blob entries.
func (w *world) rows() int {
	w.t.Helper()
	var n int
	if err := w.db.QueryRow(context.Background(), "SELECT count(*) FROM blob_entries").Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// objects counts the objects in every container's bucket.
func (w *world) objects() int {
	w.t.Helper()
	n := 0
	for _, c := range storage.Containers {
		out, err := w.s3Client().ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String(w.s3.BucketPrefix + string(c))})
		if err != nil {
			w.t.Fatalf("list %s: %v", c, err)
		}
		n += len(out.Contents)
	}
	return n
}

// object reads a stored object as it sits in the store.
func (w *world) object(container, name string) []byte {
	w.t.Helper()
	out, err := w.s3Client().GetObject(context.Background(), &awss3.GetObjectInput{Bucket: aws.String(w.s3.BucketPrefix + container), Key: aws.String(name)})
	if err != nil {
		w.t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

// replaceObject overwrites a stored object behind the service's back.
func (w *world) replaceObject(container, name string, b []byte) {
	w.t.Helper()
	_, err := w.s3Client().PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String(w.s3.BucketPrefix + container), Key: aws.String(name), Body: bytes.NewReader(b)})
	if err != nil {
		w.t.Fatal(err)
	}
}

// seedLocation creates a business owned by owner with one location, as the
// admin CLI would, and returns the location id.
func (w *world) seedLocation(owner string) int64 {
	w.t.Helper()
	var id int64
	err := w.db.QueryRow(context.Background(), `
		WITH b AS (INSERT INTO businesses (owner_subject, name, email) VALUES ($1, 'Clinic', 'c@example.com') RETURNING id)
		INSERT INTO business_locations (business_id, name) SELECT id, 'Main' FROM b RETURNING id`, owner).Scan(&id)
	if err != nil {
		w.t.Fatal(err)
	}
	return id
}
