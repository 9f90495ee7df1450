// Package bench measures the blob paths of the real service, built from
// cmd/carebridge and run as its own process, side by side with the
// S3-compatible server underneath it (versitygw) reached directly with
// aws-sdk-go-v2. One run of BenchmarkBlob prints one table:
//
//	make bench
//	go test -run '^$' -bench . -benchtime 1x -timeout 30m ./test/bench
//
// It needs PostgreSQL (pgtest) and VERSITYGW_BIN (s3test); without
// VERSITYGW_BIN it is skipped. Plain `go test ./...` runs no benchmark.
//
// Environment:
//
//	BENCH_PPROF=DIR   after the timed runs, take CPU and allocation profiles
//	                  of the server for each API path and write them to DIR
//	                  (the server is built with testdata/pprofhook.go added
//	                  by `go build -overlay`; the service code is untouched)
//	BENCH_STRICT=1    fail the benchmark when a target is missed
//	BENCH_OVERLAY=F   build the server with the `go build -overlay` file F
//	                  (absolute paths), to measure a candidate change to the
//	                  service without editing the tree
package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/core/storage/segcrypt"
	"github.com/carebridge/carebridge/test/pgtest"
	"github.com/carebridge/carebridge/test/s3test"
)

const (
	fileSize = 256 << 20 // the file of the throughput figures
	bigSize  = 1 << 30   // the file of the memory figure
	reps     = 3         // every figure is the median of this many runs
	partSize = 64 << 20  // the service's default s3.DefaultPartSize

	directBucket = "bench-direct"
	opTimeout    = 5 * time.Minute
	copyBuf      = 256 << 10
	proxyBuf     = 1 << 20
)

// Targets of the issue.
const (
	plainRatio     = 0.80 // plain upload/download vs the direct figure
	encryptedRatio = 0.60 // encrypted upload/download vs the direct figure
	plainRelay     = 0.95 // plain download vs the relay (the proxy row)
	encryptedRelay = 0.75 // encrypted download vs the relay plus GCM open
	maxRSSMiB      = 100  // server peak RSS during a 1 GiB upload
)

func BenchmarkBlob(b *testing.B) {
	// Everything runs once, whatever b.N: each figure is a median of reps
	// runs of a 256 MiB (or 1 GiB) transfer.
	e := setup(b)
	r := e.run()
	r.print(os.Stdout)
	if e.pprofDir != "" {
		e.profile()
	}
	if os.Getenv("BENCH_STRICT") == "1" && !r.allPass() {
		b.Error("a target was missed (BENCH_STRICT=1)")
	}
	b.ReportMetric(0, "ns/op") // one run of everything: ns/op means nothing
	b.ReportMetric(r.mbps(pUploadPlain), "upload-MB/s")
	b.ReportMetric(r.mbps(pUploadEnc), "upload-enc-MB/s")
	b.ReportMetric(r.mbps(pDownloadPlain), "download-MB/s")
	b.ReportMetric(r.mbps(pDownloadEnc), "download-enc-MB/s")
	b.ReportMetric(kib2mib(r.median(pBigPlain).hwmKiB), "peak-RSS-MiB")
}

// world is the running service, its S3 server and the clients of both.
type world struct {
	b         *testing.B
	tmp       string
	s3cfg     s3.Config
	raw       *awss3.Client // straight to versitygw
	proxy     string        // URL of a minimal relay of versitygw's objects
	api       *http.Client  // to the service
	base      string        // http://127.0.0.1:port of the service
	token     string
	server    *exec.Cmd
	vgwPID    int // 0 when not found: its CPU is then not reported
	pprofDir  string
	pprofBase string
	sha       map[int64]string // expected SHA-256 of the text file of each size
	dbURL     string
	bin       string // the service's binary, also its admin CLI
	env       []string
}

// setup starts the service; extraEnv adds to (or overrides) its environment.
func setup(b *testing.B, extraEnv ...string) *world {
	b.Helper()
	e := &world{b: b, tmp: b.TempDir(), sha: map[int64]string{}}
	e.s3cfg = s3test.Start(b)
	dbURL := pgtest.New(b)
	e.vgwPID = findPID(e.s3cfg.AccessKey)

	e.pprofDir = pprofDir(b)
	bin := e.build(nil)
	e.bin, e.dbURL = bin, dbURL

	for _, n := range []int64{fileSize, bigSize} {
		h := sha256.New()
		if _, err := io.Copy(h, newTextFile(n)); err != nil {
			b.Fatal(err)
		}
		e.sha[n] = hex.EncodeToString(h.Sum(nil))
	}

	key := make([]byte, 32)
	_, _ = rand.Read(key)
	addr := freeAddr(b)
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.tmp,
		"HTTP_ADDR=" + addr,
		"AUTH_DEV_MODE=true",
		"DEV_KEY_FILE=" + filepath.Join(e.tmp, "dev.pem"),
		"DATABASE_URL=" + dbURL,
		"CLOUD_STORAGE_CONNECTION_STRING=" + e.s3cfg.ConnectionString(),
		"CLOUD_STORAGE_ENCRYPTION_KEY=" + base64.StdEncoding.EncodeToString(key),
		"MAX_UPLOAD_BYTES=" + strconv.Itoa(2<<30),
	}
	env = append(env, extraEnv...)
	if e.pprofDir != "" {
		pa := freeAddr(b)
		env = append(env, "CAREBRIDGE_BENCH_PPROF_ADDR="+pa)
		e.pprofBase = "http://" + pa
	}

	e.env = env
	e.token = e.devToken()

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true
	e.api = &http.Client{Transport: tr}
	e.server, e.base = e.serve(bin, env, "server.log")

	e.raw = newDirectClient(e.s3cfg)
	e.proxy = e.startProxy()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.raw.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(directBucket)}); err != nil {
		b.Fatalf("create bucket: %v", err)
	}
	return e
}

// pprofDir is BENCH_PPROF made absolute and created, or "" when unset.
func pprofDir(b *testing.B) string {
	dir := os.Getenv("BENCH_PPROF")
	if dir == "" {
		return ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		b.Fatal(err)
	}
	return abs
}

// devToken returns a dev-mode token of subject "bench" from e.bin run
// with e.env.
func (e *world) devToken() string {
	e.b.Helper()
	tok := exec.Command(e.bin, "dev-token", "--sub", "bench", "--ttl", "3h")
	tok.Env = e.env
	out, err := tok.Output()
	if err != nil {
		e.b.Fatalf("dev-token: %v\n%s", err, stderrOf(err))
	}
	return strings.TrimSpace(string(out))
}

// serve starts bin as the service with env, logging to logName in the
// temporary directory, waits until it is healthy, and stops it when the
// benchmark ends. It returns the process and its base URL.
func (e *world) serve(bin string, env []string, logName string) (*exec.Cmd, string) {
	e.b.Helper()
	var addr string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HTTP_ADDR="); ok {
			addr = v
		}
	}
	logf, err := os.Create(filepath.Join(e.tmp, logName))
	if err != nil {
		e.b.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	cmd.Dir = e.tmp
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		e.b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	e.b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	e.waitHealthy("http://"+addr, done, logName)
	return cmd, "http://" + addr
}

// withoutAudit starts a second service like e's, built with app/audit.go
// replaced by testdata/noaudit.go (a no-op audit writer), on another port,
// and returns a world whose calls go to it.
func (e *world) withoutAudit() *world {
	e.b.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		e.b.Fatalf("go env GOMOD: %v", err)
	}
	noop, err := filepath.Abs(filepath.Join("testdata", "noaudit.go"))
	if err != nil {
		e.b.Fatal(err)
	}
	dir := filepath.Join(e.tmp, "noaudit")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.b.Fatal(err)
	}
	bin := e.build(map[string]string{filepath.Join(filepath.Dir(strings.TrimSpace(string(gomod))), "app", "audit.go"): noop}, dir)
	env := e.envOnFreePort()
	o := *e
	o.bin, o.env = bin, env
	o.server, o.base = e.serve(bin, env, "server-noaudit.log")
	return &o
}

// envOnFreePort is e's environment with HTTP_ADDR on a free port, and
// extra added: a second service beside e's.
func (e *world) envOnFreePort(extra ...string) []string {
	env := slices.Clone(e.env)
	for i, kv := range env {
		if strings.HasPrefix(kv, "HTTP_ADDR=") {
			env[i] = "HTTP_ADDR=" + freeAddr(e.b)
		}
	}
	return append(env, extra...)
}

// build compiles cmd/carebridge into dir (the temporary directory when
// absent) with the files of replace swapped in through an overlay; with
// BENCH_PPROF it adds testdata/pprofhook.go too.
func (e *world) build(replace map[string]string, dir ...string) string {
	e.b.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		e.b.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	bin := filepath.Join(append(dir, e.tmp)[0], "carebridge")
	args := []string{"build", "-o", bin}
	replace = maps.Clone(replace)
	if replace == nil {
		replace = map[string]string{}
	}
	if f := os.Getenv("BENCH_OVERLAY"); f != "" {
		var o struct{ Replace map[string]string }
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &o)
		}
		if err != nil {
			e.b.Fatalf("BENCH_OVERLAY: %v", err)
		}
		maps.Copy(replace, o.Replace)
		progress("server built with the overlay %s: %v", f, slices.Sorted(maps.Keys(o.Replace)))
	}
	if e.pprofDir != "" {
		hook, err := filepath.Abs(filepath.Join("testdata", "pprofhook.go"))
		if err != nil {
			e.b.Fatal(err)
		}
		replace[filepath.Join(root, "cmd", "carebridge", "zz_benchpprof.go")] = hook
	}
	if len(replace) > 0 {
		overlay, _ := json.Marshal(map[string]map[string]string{"Replace": replace})
		path := filepath.Join(e.tmp, "overlay.json")
		if err := os.WriteFile(path, overlay, 0o644); err != nil {
			e.b.Fatal(err)
		}
		args = append(args, "-overlay", path)
	}
	cmd := exec.Command("go", append(args, "./cmd/carebridge")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		e.b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func (e *world) waitHealthy(base string, exited <-chan struct{}, logName string) {
	e.b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := e.api.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			e.b.Fatalf("carebridge exited:\n%s", e.logTail(logName))
		case <-time.After(100 * time.Millisecond):
		}
	}
	e.b.Fatalf("carebridge not healthy within 60s:\n%s", e.logTail(logName))
}

func (e *world) serverLog() string { return e.logTail("server.log") }

// logTail is the end of the log file name in the temporary directory.
func (e *world) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.tmp, name))
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// newDirectClient is a client of versitygw set up as adapters/s3 sets up
// its own: static keys, path-style, plain http, checksums only where an
// operation requires them.
func newDirectClient(cfg s3.Config) *awss3.Client {
	return awss3.NewFromConfig(aws.Config{
		Region:                     cfg.Region,
		Credentials:                aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String("http://" + cfg.Endpoint)
		o.UsePathStyle = true
	})
}

// unsigned sends a body as UNSIGNED-PAYLOAD without retries, as the
// service does with its non-seekable bodies.
func unsigned(o *awss3.Options) {
	o.RetryMaxAttempts = 1
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

// Paths measured.
const (
	pDirectPut       = "direct PutObject, stream, unsigned"
	pDirectPutSigned = "direct PutObject, seekable, signed"
	pDirectMultipart = "direct multipart, 64 MiB parts, unsigned"
	pDirectGet       = "direct GetObject"
	pProxyGet        = "direct GetObject via a minimal Go proxy"
	pGCMOpen         = "GCM open, in-process, one core"
	pEncCeiling      = "ceiling, encrypted: relay + GCM open"
	pUploadPlain     = "API upload, plain"
	pUploadEnc       = "API upload, encrypted"
	pDownloadPlain   = "API download, plain"
	pDownloadEnc     = "API download, encrypted"
	pBigPlain        = "API upload 1 GiB, plain"
	pBigEnc          = "API upload 1 GiB, encrypted"
)

// sample is one timed transfer.
type sample struct {
	wall   time.Duration
	cpu    cpuTimes // seconds of CPU spent during it, per process
	hwmKiB int64    // server VmHWM after it (memory runs only)
	maxKiB int64    // largest server VmRSS seen while it ran
}

type results struct {
	runs     map[string][]sample
	bytes    map[string]int64
	idleKiB  int64 // server VmRSS before any transfer
	hwm256   int64 // server VmHWM after the 256 MiB runs
	resetHWM bool  // clear_refs worked: each 1 GiB run has its own peak
	vgw      bool
	wall     time.Duration
}

func (e *world) run() *results {
	start := time.Now()
	r := &results{runs: map[string][]sample{}, bytes: map[string]int64{}, vgw: e.vgwPID != 0}
	r.idleKiB = procStatusKiB(e.server.Process.Pid, "VmRSS")
	add := func(path string, n int64, s sample) {
		r.runs[path] = append(r.runs[path], s)
		r.bytes[path] = n
		progress("%d/%d %-42s %8.1f MB/s  %6.2fs", len(r.runs[path]), reps, path, mbps(n, s.wall), s.wall.Seconds())
	}

	// Warm-up: connections, buckets, page cache of the binaries.
	e.directPut(e.ctx(), "warmup", 1<<20, false)
	id := e.upload(1<<20, false)
	e.download(id, 1<<20)
	e.delete(id)

	for rep := range reps {
		k := fmt.Sprintf("direct-%d", rep)
		add(pDirectPut, fileSize, e.timed(func() { e.directPut(e.ctx(), k, fileSize, false) }))
		add(pDirectGet, fileSize, e.timed(func() { e.directGet(k, fileSize) }))
		add(pProxyGet, fileSize, e.timed(func() { e.proxyGet(k, fileSize) }))
		open := e.timed(func() { gcmOpen(e.b, fileSize) })
		add(pGCMOpen, fileSize, open)
		add(pEncCeiling, fileSize, sample{wall: r.runs[pProxyGet][rep].wall + open.wall})
		e.directDelete(k)
		add(pDirectPutSigned, fileSize, e.timed(func() { e.directPut(e.ctx(), k, fileSize, true) }))
		e.directDelete(k)
		add(pDirectMultipart, fileSize, e.timed(func() { e.directMultipart(k, fileSize) }))
		e.directDelete(k)

		for _, enc := range []bool{false, true} {
			up, down := pUploadPlain, pDownloadPlain
			if enc {
				up, down = pUploadEnc, pDownloadEnc
			}
			var id int64
			add(up, fileSize, e.timed(func() { id = e.upload(fileSize, enc) }))
			add(down, fileSize, e.timed(func() { e.download(id, fileSize) }))
			e.delete(id)
		}
	}
	r.hwm256 = procStatusKiB(e.server.Process.Pid, "VmHWM")

	r.resetHWM = true
	for rep := range reps {
		for _, enc := range []bool{false, true} {
			path := pBigPlain
			if enc {
				path = pBigEnc
			}
			if !resetPeakRSS(e.server.Process.Pid) {
				r.resetHWM = false
			}
			stop := e.sampleRSS()
			var id int64
			s := e.timed(func() { id = e.upload(bigSize, enc) })
			s.maxKiB = stop()
			s.hwmKiB = procStatusKiB(e.server.Process.Pid, "VmHWM")
			add(path, bigSize, s)
			progress("%d/%d %-42s peak RSS %.1f MiB (sampled max %.1f MiB)", rep+1, reps, path, kib2mib(s.hwmKiB), kib2mib(s.maxKiB))
			e.delete(id)
		}
	}
	r.wall = time.Since(start)
	return r
}

func (e *world) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	e.b.Cleanup(cancel)
	return ctx
}

// timed runs f and records its wall time and the CPU time that the bench,
// the service and versitygw spent meanwhile.
func (e *world) timed(f func()) sample {
	before := e.cpu()
	t0 := time.Now()
	f()
	wall := time.Since(t0)
	after := e.cpu()
	return sample{wall: wall, cpu: after.sub(before)}
}

// sampleRSS polls the server's VmRSS until the returned function is
// called, which returns the largest value seen, in KiB.
func (e *world) sampleRSS() func() int64 {
	var (
		peak int64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, procStatusKiB(e.server.Process.Pid, "VmRSS"))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 { close(stop); <-done; return peak }
}

// --- the service over HTTP ---

// upload posts a text file of n bytes as the multipart form the contract
// describes, streamed: a generator feeds a multipart.Writer through a pipe,
// so the client never holds the file. It returns the blob's id.
func (e *world) upload(n int64, encrypted bool) int64 {
	e.b.Helper()
	fields := [][2]string{
		{"originalFilename", "bench.txt"},
		{"contentType", "text/plain"},
		{"fileSize", strconv.FormatInt(n, 10)},
	}
	if encrypted {
		fields = append(fields, [2]string{"isEncrypted", "true"})
	}
	pr, pw := io.Pipe()
	defer pr.Close()
	mw := multipart.NewWriter(pw)
	length := formLength(mw.Boundary(), fields, n)
	go func() {
		err := writeForm(mw, fields, newTextFile(n))
		pw.CloseWithError(err)
	}()

	req, err := http.NewRequestWithContext(e.ctx(), http.MethodPost, e.base+"/cloud-blob/upload", pr)
	if err != nil {
		e.b.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.api.Do(req)
	if err != nil {
		e.b.Fatalf("upload %d bytes: %v\n%s", n, err, e.serverLog())
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		e.b.Fatalf("upload %d bytes: %s: %s", n, resp.Status, body)
	}
	var blob struct {
		ID          int64  `json:"id"`
		FileSize    int64  `json:"fileSize"`
		IsEncrypted bool   `json:"isEncrypted"`
		SHA256      string `json:"sha256"`
	}
	if err := json.Unmarshal(body, &blob); err != nil {
		e.b.Fatalf("upload: %v: %s", err, body)
	}
	if want, ok := e.sha[n]; ok && blob.SHA256 != want || blob.FileSize != n || blob.IsEncrypted != encrypted {
		e.b.Fatalf("upload: got %s, want %d bytes, sha256 %s, encrypted %t", body, n, e.sha[n], encrypted)
	}
	return blob.ID
}

func writeFields(mw *multipart.Writer, fields [][2]string) (io.Writer, error) {
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return nil, err
		}
	}
	return mw.CreateFormFile("file", "bench.txt")
}

func writeForm(mw *multipart.Writer, fields [][2]string, file io.Reader) error {
	w, err := writeFields(mw, fields)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, file); err != nil {
		return err
	}
	return mw.Close()
}

// formLength is the length of the form writeForm writes with boundary and
// a file of n bytes, so the request carries a Content-Length as a browser's
// does.
func formLength(boundary string, fields [][2]string, n int64) int64 {
	var c countWriter
	mw := multipart.NewWriter(&c)
	if err := mw.SetBoundary(boundary); err != nil {
		panic(err)
	}
	if _, err := writeFields(mw, fields); err != nil {
		panic(err)
	}
	mw.Close()
	return c.n + n
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// download reads blob id whole and checks every byte against the generator.
func (e *world) download(id, n int64) {
	e.b.Helper()
	req, err := http.NewRequestWithContext(e.ctx(), http.MethodGet, e.base+"/cloud-blob/download/"+strconv.FormatInt(id, 10), nil)
	if err != nil {
		e.b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.api.Do(req)
	if err != nil {
		e.b.Fatalf("download %d: %v", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		e.b.Fatalf("download %d: %s: %s", id, resp.Status, body)
	}
	if got, err := drain(resp.Body, n); err != nil {
		e.b.Fatalf("download %d: %v after %d of %d bytes", id, err, got, n)
	}
}

func (e *world) delete(id int64) {
	e.b.Helper()
	req, _ := http.NewRequestWithContext(e.ctx(), http.MethodDelete, e.base+"/cloud-blob/"+strconv.FormatInt(id, 10), nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.api.Do(req)
	if err != nil {
		e.b.Fatalf("delete %d: %v", id, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.b.Fatalf("delete %d: %s", id, resp.Status)
	}
}

// drain reads r to its end into a reused buffer, comparing the bytes with
// the text file of n bytes.
func drain(r io.Reader, n int64) (int64, error) {
	buf := make([]byte, copyBuf)
	var got int64
	for {
		m, err := r.Read(buf)
		if m > 0 {
			if got+int64(m) > n {
				return got + int64(m), fmt.Errorf("more than %d bytes", n)
			}
			if !textAt(got, buf[:m]) {
				return got, fmt.Errorf("wrong bytes at %d", got)
			}
			got += int64(m)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return got, err
		}
	}
	if got != n {
		return got, io.ErrUnexpectedEOF
	}
	return got, nil
}

// --- versitygw directly ---

func (e *world) directPut(ctx context.Context, key string, n int64, signed bool) {
	e.b.Helper()
	in := &awss3.PutObjectInput{Bucket: aws.String(directBucket), Key: &key, ContentLength: aws.Int64(n)}
	var opts []func(*awss3.Options)
	if signed {
		in.Body = newTextFile(n) // seekable: the SDK hashes it to sign it
	} else {
		in.Body = struct{ io.Reader }{newTextFile(n)}
		opts = append(opts, unsigned)
	}
	if _, err := e.raw.PutObject(ctx, in, opts...); err != nil {
		e.b.Fatalf("direct put %s: %v", key, err)
	}
}

// directMultipart uploads as the service's adapter does for a file larger
// than one part: sequential non-seekable parts of partSize, unsigned.
func (e *world) directMultipart(key string, n int64) {
	e.b.Helper()
	ctx := e.ctx()
	bucket := aws.String(directBucket)
	created, err := e.raw.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: bucket, Key: &key})
	if err != nil {
		e.b.Fatalf("create multipart: %v", err)
	}
	src := newTextFile(n)
	var parts []types.CompletedPart
	for off, num := int64(0), int32(1); off < n; off, num = off+partSize, num+1 {
		size := min(partSize, n-off)
		out, err := e.raw.UploadPart(ctx, &awss3.UploadPartInput{
			Bucket: bucket, Key: &key, UploadId: created.UploadId, PartNumber: aws.Int32(num),
			Body: struct{ io.Reader }{io.LimitReader(src, size)}, ContentLength: aws.Int64(size),
		}, unsigned)
		if err != nil {
			e.b.Fatalf("upload part %d: %v", num, err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
	}
	_, err = e.raw.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: bucket, Key: &key, UploadId: created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		e.b.Fatalf("complete multipart: %v", err)
	}
}

func (e *world) directGet(key string, n int64) {
	e.b.Helper()
	out, err := e.raw.GetObject(e.ctx(), &awss3.GetObjectInput{Bucket: aws.String(directBucket), Key: &key})
	if err != nil {
		e.b.Fatalf("direct get %s: %v", key, err)
	}
	defer out.Body.Close()
	if got, err := drain(out.Body, n); err != nil {
		e.b.Fatalf("direct get %s: %v after %d of %d bytes", key, err, got, n)
	}
}

// startProxy serves GET /KEY by relaying the object from versitygw: the
// least any service that passes the bytes through must do (an extra hop
// through user space), with a large copy buffer. It runs in the bench's
// process.
func (e *world) startProxy() string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := e.raw.GetObject(r.Context(), &awss3.GetObjectInput{Bucket: aws.String(directBucket), Key: aws.String(r.URL.Path[1:])})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer out.Body.Close()
		w.Header().Set("Content-Length", strconv.FormatInt(aws.ToInt64(out.ContentLength), 10))
		io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{out.Body}, make([]byte, proxyBuf))
	}))
	e.b.Cleanup(srv.Close)
	return srv.URL
}

func (e *world) proxyGet(key string, n int64) {
	e.b.Helper()
	req, _ := http.NewRequestWithContext(e.ctx(), http.MethodGet, e.proxy+"/"+key, nil)
	resp, err := e.api.Do(req)
	if err != nil {
		e.b.Fatalf("proxy get %s: %v", key, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.b.Fatalf("proxy get %s: %s", key, resp.Status)
	}
	if got, err := drain(resp.Body, n); err != nil {
		e.b.Fatalf("proxy get %s: %v after %d of %d bytes", key, err, got, n)
	}
}

func (e *world) directDelete(key string) {
	e.b.Helper()
	if _, err := e.raw.DeleteObject(e.ctx(), &awss3.DeleteObjectInput{Bucket: aws.String(directBucket), Key: &key}); err != nil {
		e.b.Fatalf("direct delete %s: %v", key, err)
	}
}

// --- profiles (BENCH_PPROF) ---

// profile runs each API path once more with the server's CPU profiler on,
// and writes its allocation profile after each, into e.pprofDir.
// hook calls the server's pprof hook (BENCH_PPROF builds only).
func (e *world) hook(path, file string) {
	e.b.Helper()
	resp, err := e.api.PostForm(e.pprofBase+path, url.Values{"file": {filepath.Join(e.pprofDir, file)}})
	if err != nil {
		e.b.Fatalf("pprof hook %s: %v", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.b.Fatalf("pprof hook %s: %s", path, resp.Status)
	}
}

func (e *world) profile() {
	e.b.Helper()
	hook := e.hook
	prof := func(name string, f func()) {
		hook("/cpu/start", "cpu-"+name+".pprof")
		f()
		hook("/cpu/stop", "")
		hook("/profile/allocs", "allocs-"+name+".pprof")
	}
	for _, enc := range []bool{false, true} {
		suffix := "plain"
		if enc {
			suffix = "encrypted"
		}
		var id int64
		prof("upload-"+suffix, func() { id = e.upload(fileSize, enc) })
		prof("download-"+suffix, func() { e.download(id, fileSize) })
		e.delete(id)
		prof("upload-1g-"+suffix, func() { id = e.upload(bigSize, enc) })
		e.delete(id)
	}
	fmt.Printf("\nserver profiles in %s: go tool pprof -top FILE\n", e.pprofDir)
}

// --- the report ---

func (r *results) median(path string) sample {
	runs := r.runs[path]
	if len(runs) == 0 {
		return sample{}
	}
	pick := func(f func(sample) float64) float64 {
		v := make([]float64, len(runs))
		for i, s := range runs {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return sample{
		wall: time.Duration(pick(func(s sample) float64 { return float64(s.wall) })),
		cpu: cpuTimes{
			client: pick(func(s sample) float64 { return s.cpu.client }),
			server: pick(func(s sample) float64 { return s.cpu.server }),
			vgw:    pick(func(s sample) float64 { return s.cpu.vgw }),
			reads:  pick(func(s sample) float64 { return s.cpu.reads }),
			writes: pick(func(s sample) float64 { return s.cpu.writes }),
		},
		hwmKiB: int64(pick(func(s sample) float64 { return float64(s.hwmKiB) })),
		maxKiB: int64(pick(func(s sample) float64 { return float64(s.maxKiB) })),
	}
}

func (r *results) mbps(path string) float64 { return mbps(r.bytes[path], r.median(path).wall) }

type check struct {
	path, vs string
	min      float64
	label    string // the row's name when not path
}

var checks = []check{
	{pUploadPlain, pDirectPut, plainRatio, ""},
	{pDownloadPlain, pDirectGet, plainRatio, ""},
	{pUploadEnc, pDirectPut, encryptedRatio, ""},
	{pDownloadEnc, pDirectGet, encryptedRatio, ""},
	{pDownloadPlain, pProxyGet, plainRelay, pDownloadPlain + " vs relay"},
	{pDownloadEnc, pEncCeiling, encryptedRelay, pDownloadEnc + " vs ceiling"},
}

func (c check) pass(r *results) bool { return r.mbps(c.path)/r.mbps(c.vs) >= c.min }

func rssPass(s sample) bool { return s.hwmKiB > 0 && kib2mib(s.hwmKiB) < maxRSSMiB }

func (r *results) allPass() bool {
	for _, c := range checks {
		if !c.pass(r) {
			return false
		}
	}
	return rssPass(r.median(pBigPlain)) && rssPass(r.median(pBigEnc))
}

func (r *results) print(w io.Writer) {
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	runs := func(path string) string {
		var s []string
		for _, x := range r.runs[path] {
			s = append(s, fmt.Sprintf("%.0f", mbps(r.bytes[path], x.wall)))
		}
		return strings.Join(s, " ")
	}
	fmt.Fprintf(w, "\nCarebridge blob bench: 256 MiB text file, median of %d runs, MB/s = 10^6 bytes/s;\n", reps)
	fmt.Fprintf(w, "service (own process) and direct aws-sdk-go-v2 against the same versitygw (posix).\n\n")
	fmt.Fprintf(w, "%-42s %9s  %-17s %6s %8s  %s\n", "path", "MB/s", "runs", "ratio", "target", "result")
	row := func(path, vs string, min float64, ok bool, label ...string) {
		ratio, target, res := "", "", ""
		if vs != "" {
			ratio = fmt.Sprintf("%.2f", r.mbps(path)/r.mbps(vs))
		}
		if min > 0 {
			target = fmt.Sprintf(">=%.2f", min)
			res = verdict(ok)
		}
		fmt.Fprintf(w, "%-42s %9.1f  %-17s %6s %8s  %s\n", append(label, path)[0], r.mbps(path), runs(path), ratio, target, res)
	}
	for _, p := range []string{pDirectPut, pDirectPutSigned, pDirectMultipart, pDirectGet} {
		row(p, "", 0, false)
	}
	row(pProxyGet, pDirectGet, 0, true)
	row(pGCMOpen, "", 0, false)
	row(pEncCeiling, pDirectGet, 0, false)
	for _, c := range checks {
		if c.label == "" {
			row(c.path, c.vs, c.min, c.pass(r))
		} else {
			row(c.path, c.vs, c.min, c.pass(r), c.label)
		}
	}
	fmt.Fprintf(w, "(ratios: uploads vs %q, downloads vs %q, and vs their ceilings:\n", pDirectPut, pDirectGet)
	fmt.Fprintf(w, " the proxy row is the ceiling of anything that relays the bytes (it runs in the bench's process);\n")
	fmt.Fprintf(w, " an encrypted download relays the bytes and opens every segment on the same 2 busy cores, so its\n")
	fmt.Fprintf(w, " ceiling, run by run, is the relay's time plus the time to open 256 MiB of 64 KiB segments\n")
	fmt.Fprintf(w, " with segcrypt in the bench's process on one core)\n\n")

	fmt.Fprintf(w, "%-42s %9s  %-17s %6s %8s  %s\n", "server peak RSS (VmHWM), 1 GiB upload", "MiB", "runs", "", "target", "result")
	for _, p := range []string{pBigPlain, pBigEnc} {
		m := r.median(p)
		var s []string
		for _, x := range r.runs[p] {
			s = append(s, fmt.Sprintf("%.0f", kib2mib(x.hwmKiB)))
		}
		fmt.Fprintf(w, "%-42s %9.1f  %-17s %6s %8s  %s\n", strings.TrimPrefix(p, "API upload 1 GiB, "), kib2mib(m.hwmKiB),
			strings.Join(s, " "), "", fmt.Sprintf("<%d", maxRSSMiB), verdict(rssPass(m)))
	}
	note := "VmHWM reset before each run (clear_refs)"
	if !r.resetHWM {
		note = "VmHWM could not be reset: peak since start"
	}
	fmt.Fprintf(w, "(%s; idle RSS %.1f MiB; peak after the 256 MiB runs %.1f MiB; 1 GiB upload plain %.1f MB/s, encrypted %.1f MB/s)\n\n",
		note, kib2mib(r.idleKiB), kib2mib(r.hwm256), r.mbps(pBigPlain), r.mbps(pBigEnc))

	fmt.Fprintf(w, "Where the 2 cores go, per transfer (median): wall and CPU seconds of each process,\n")
	fmt.Fprintf(w, "cores busy on average, and the service's read/write system calls per MiB moved\n")
	fmt.Fprintf(w, "%-42s %7s %7s %7s %7s %7s %7s %7s\n", "path", "wall", "client", "service", "vgw", "cores", "svc rd", "svc wr")
	for _, p := range []string{pDirectPut, pDirectPutSigned, pDirectMultipart, pDirectGet, pProxyGet, pUploadPlain, pUploadEnc, pDownloadPlain, pDownloadEnc, pBigPlain, pBigEnc} {
		m := r.median(p)
		vgw := "n/a"
		if r.vgw {
			vgw = fmt.Sprintf("%.2f", m.cpu.vgw)
		}
		total := m.cpu.client + m.cpu.server + m.cpu.vgw
		mib := float64(r.bytes[p]) / (1 << 20)
		fmt.Fprintf(w, "%-42s %7.2f %7.2f %7.2f %7s %7.2f %7.1f %7.1f\n", p, m.wall.Seconds(), m.cpu.client, m.cpu.server, vgw,
			total/m.wall.Seconds(), m.cpu.reads/mib, m.cpu.writes/mib)
	}
	fmt.Fprintf(w, "\nverdict: %s (bench wall time %s)\n", verdict(r.allPass()), r.wall.Round(time.Second))
}

// gcmSource is the ciphertext that gcmOpen opens over and over: 16 MiB of
// the text file sealed with segcrypt under a random key.
var gcmSource struct {
	once      sync.Once
	key, text []byte
}

const gcmSourceSize = 16 << 20

// gcmOpen opens n bytes of 64 KiB segments with segcrypt on one goroutine,
// as the service does for an encrypted download, from memory.
func gcmOpen(b *testing.B, n int64) {
	b.Helper()
	src := &gcmSource
	src.once.Do(func() {
		src.key = make([]byte, segcrypt.KeySize)
		_, _ = rand.Read(src.key)
		enc, err := segcrypt.EncryptReader(newTextFile(gcmSourceSize), src.key)
		if err == nil {
			src.text, err = io.ReadAll(enc)
		}
		if err != nil {
			b.Fatalf("seal: %v", err)
		}
	})
	final := segcrypt.FinalSegment(gcmSourceSize)
	for done := int64(0); done < n; done += gcmSourceSize {
		d, err := segcrypt.DecryptReader(bytes.NewReader(src.text), src.key, 0, final)
		if err == nil {
			_, err = io.Copy(io.Discard, d)
		}
		if err != nil {
			b.Fatalf("open: %v", err)
		}
	}
}

// --- the file ---

// line is one line of the text file; block is lines up to 64 KiB, and the
// file is block over and over.
const line = "Carebridge bench: the quick brown fox jumps over the lazy dog.\n"

var block = bytes.Repeat([]byte(line), 1024)

// textFile is n bytes of printable text, generated, seekable.
type textFile struct{ off, n int64 }

func newTextFile(n int64) *textFile { return &textFile{n: n} }

func (t *textFile) Read(p []byte) (int, error) {
	if t.off >= t.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), t.n-t.off)]
	for i := 0; i < len(p); {
		i += copy(p[i:], block[(t.off+int64(i))%int64(len(block)):])
	}
	t.off += int64(len(p))
	return len(p), nil
}

// WriteTo hands out the block itself, without a copy.
func (t *textFile) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for t.off < t.n {
		i := t.off % int64(len(block))
		chunk := block[i:min(int64(len(block)), i+t.n-t.off)]
		m, err := w.Write(chunk)
		t.off += int64(m)
		total += int64(m)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (t *textFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += t.off
	case io.SeekEnd:
		offset += t.n
	default:
		return 0, errors.New("seek: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("seek: negative offset")
	}
	t.off = offset
	return offset, nil
}

// textAt reports whether p is the text file's bytes from off.
func textAt(off int64, p []byte) bool {
	for len(p) > 0 {
		i := off % int64(len(block))
		m := min(len(p), len(block)-int(i))
		if !bytes.Equal(p[:m], block[i:int(i)+m]) {
			return false
		}
		p, off = p[m:], off+int64(m)
	}
	return true
}

// --- processes ---

// cpuTimes is CPU seconds per process, and the read and write system
// calls of the service.
type cpuTimes struct {
	client, server, vgw float64
	reads, writes       float64
}

func (c cpuTimes) sub(d cpuTimes) cpuTimes {
	return cpuTimes{c.client - d.client, c.server - d.server, c.vgw - d.vgw, c.reads - d.reads, c.writes - d.writes}
}

func (e *world) cpu() cpuTimes {
	c := cpuTimes{client: procCPU(os.Getpid()), server: procCPU(e.server.Process.Pid)}
	c.reads, c.writes = procSyscalls(e.server.Process.Pid)
	if e.vgwPID != 0 {
		c.vgw = procCPU(e.vgwPID)
	}
	return c
}

// clockTick is USER_HZ, 100 on every Linux platform Go supports.
const clockTick = 100

// procCPU returns the user+system CPU seconds of process pid so far.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTick
}

// procSyscalls returns the read and write system calls of process pid so
// far, from /proc/pid/io.
func procSyscalls(pid int) (reads, writes float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		name, value, _ := strings.Cut(l, ":")
		n, _ := strconv.ParseFloat(strings.TrimSpace(value), 64)
		switch name {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// procStatusKiB returns a "kB" field of /proc/pid/status, such as VmHWM.
func procStatusKiB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if ok && name == field {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// resetPeakRSS sets the process's VmHWM back to its current RSS.
func resetPeakRSS(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// findPID returns the process whose command line holds marker (the random
// access key s3test gave versitygw), or 0.
func findPID(marker string) int {
	pids := pidsWhere("cmdline", func(cmdline []byte) bool { return bytes.Contains(cmdline, []byte(marker)) })
	if len(pids) == 0 {
		return 0
	}
	return pids[0]
}

// pidsWhere returns the processes, other than this one, whose /proc file
// (such as "comm" or "cmdline") satisfies match.
func pidsWhere(file string, match func([]byte) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), file)); err == nil && match(b) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

var progressMu sync.Mutex

func progress(format string, args ...any) {
	progressMu.Lock()
	defer progressMu.Unlock()
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func mbps(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / 1e6 / d.Seconds()
}

func kib2mib(k int64) float64 { return float64(k) / 1024 }
