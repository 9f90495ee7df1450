package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	goredis "github.com/redis/go-redis/v9"

	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/testenv"
	"github.com/carebridge/carebridge/test/wsbottest"
)

const (
	// scaleOutDuration is how long the load runs; SCALEOUT_DURATION (a Go
	// duration) shortens it for local runs.
	scaleOutDuration = 60 * time.Second
	// scaleOutRedisDB is a Redis database no other test uses.
	scaleOutRedisDB = 11
	// scaleOutSearchLimit is SEARCH_RATE_LIMIT: searches per minute per
	// caller.
	scaleOutSearchLimit = 10
	// scaleOutAgents is how many agents the bookings contend for.
	scaleOutAgents = 2
)

// scaleReply is one finished exchange of the load.
type scaleReply struct {
	status int
	header http.Header
	body   []byte
	sent   time.Time
	done   time.Time
	// instance answered.
	instance int
}

// scaleCount is one cell of the figures: requests of a kind to an
// instance that answered a status (0: no answer).
type scaleCount struct {
	kind     string
	instance int
	status   int
	code     string // the error envelope's code
}

// scaleLoad drives requests at several instances from many goroutines: it
// never touches testing.T, it records every status and every request that
// got an unexpected one.
type scaleLoad struct {
	servers []*server
	client  *http.Client
	next    atomic.Uint64

	mu       sync.Mutex
	counts   map[scaleCount]int
	failures []string
}

func newScaleLoad(servers []*server) *scaleLoad {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return &scaleLoad{servers: servers, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, counts: map[scaleCount]int{}}
}

// pick is the next instance, round robin.
func (l *scaleLoad) pick() int { return int(l.next.Add(1) % uint64(len(l.servers))) }

// send makes one request to instance i. It counts the answer under kind
// and reports false, recording the request and the answer, when the
// status is not one of want.
func (l *scaleLoad) send(kind string, i int, method, path, token string, body []byte, want []int, header ...string) (scaleReply, bool) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, l.servers[i].base+path, r)
	if err != nil {
		l.fail(kind, i, method, path, err.Error())
		return scaleReply{}, false
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k := 0; k+1 < len(header); k += 2 {
		req.Header.Set(header[k], header[k+1])
	}
	rep := scaleReply{sent: time.Now(), instance: i}
	resp, err := l.client.Do(req)
	if err != nil {
		l.count(kind, i, 0, "")
		l.fail(kind, i, method, path, err.Error())
		return rep, false
	}
	defer resp.Body.Close()
	rep.body, err = io.ReadAll(resp.Body)
	rep.done, rep.status, rep.header = time.Now(), resp.StatusCode, resp.Header
	var env struct{ Code string }
	if rep.status >= 300 {
		json.Unmarshal(rep.body, &env)
	}
	l.count(kind, i, rep.status, env.Code)
	if err != nil {
		l.fail(kind, i, method, path, fmt.Sprintf("%d, reading the body: %v", rep.status, err))
		return rep, false
	}
	if !slices.Contains(want, rep.status) {
		l.fail(kind, i, method, path, fmt.Sprintf("%d %.400s", rep.status, rep.body))
		return rep, false
	}
	return rep, true
}

func (l *scaleLoad) count(kind string, i, status int, code string) {
	l.mu.Lock()
	l.counts[scaleCount{kind, i, status, code}]++
	l.mu.Unlock()
}

// fail records a broken expectation of the load.
func (l *scaleLoad) fail(kind string, i int, method, path, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, fmt.Sprintf("%s: %s %s on instance %d: %s", kind, method, path, i, what))
}

func (l *scaleLoad) failf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, fmt.Sprintf(format, args...))
}

// figures is the table of requests by kind, instance and status.
func (l *scaleLoad) figures() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]scaleCount, 0, len(l.counts))
	for k := range l.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		x, y := keys[a], keys[b]
		if x.kind != y.kind {
			return x.kind < y.kind
		}
		if x.status != y.status {
			return x.status < y.status
		}
		if x.code != y.code {
			return x.code < y.code
		}
		return x.instance < y.instance
	})
	var b strings.Builder
	total := 0
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-9s %d %-22s instance %d: %d", k.kind, k.status, k.code, k.instance, l.counts[k])
		total += l.counts[k]
	}
	return fmt.Sprintf("%d requests:%s", total, b.String())
}

// pace waits d or until ctx is done, and reports whether the load goes on.
func pace(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// scaleUpload is one stored file: who may read it and what it holds.
type scaleUpload struct {
	id    int64
	token string
	sha   string
}

// scaleSlot is the booking of agent at minute (from 08:00 Chicago) of day
// d days from today.
func scaleSlot(agent string, day, minute, duration int) string {
	loc := mustLoc("America/Chicago")
	now := time.Now().In(loc)
	start := time.Date(now.Year(), now.Month(), now.Day()+day, 8, minute, 0, 0, loc)
	return fmt.Sprintf(`{"agentId":%q,"start":%q,"durationMinutes":%d,"reason":"check-up","locationId":"main",
		"patient":{"firstName":"Bo","lastName":"Chen","dateOfBirth":"1985-07-01","email":"bo@example.com","phone":"+1 512 555 0199"}}`,
		agent, start.Format(time.RFC3339), duration)
}

// Three instances on one PostgreSQL, one S3 server and one Redis take a
// mixed load, each request on another instance: uploads read back from
// every instance, business reads and writes, searches, one caller over its
// search limit, and bookings of the same slots of the same agents from all
// three at once.
func TestIntegrationScaleOut_ThreeInstancesShareOneDatabaseStoreAndRedis(t *testing.T) {
	duration := scaleOutDuration
	if v := os.Getenv("SCALEOUT_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SCALEOUT_DURATION=%q: want a positive Go duration", v)
		}
		duration = d
	}

	w := newWorld(t, withS3)
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379", DB: scaleOutRedisDB})
	if err := rdb.FlushDB(context.Background()).Err(); err != nil {
		testenv.Missing(t, fmt.Sprintf("Redis at 127.0.0.1:6379 unreachable (%v)", err), "run make test, which starts it (scripts/ensure-services.sh)")
	}
	t.Cleanup(func() { rdb.FlushDB(context.Background()); rdb.Close() })

	search := newFakeEHR(t, "clinica", fhirPatient("a-1", "Lopez", "Ana", "1980-02-01", "MRN-1"), fhirPatient("a-2", "Baker", "Al", "1975-06-30", "MRN-2"))
	bot := wsbottest.Start(t)
	agents := make([]string, scaleOutAgents)
	for i := range agents {
		a := drAna
		a.ID = fmt.Sprintf("dr-scale-%d", i)
		agents[i] = bot.AddAgent(a, workdays(5))
	}
	cfg := searchAndBookFile(t, search, bot.URL())
	shared := func(c *app.Config) {
		c.EHR, c.RedisURL = cfg, fmt.Sprintf("redis://127.0.0.1:6379/%d", scaleOutRedisDB)
		c.SearchRateLimit, c.SearchCacheTTL = scaleOutSearchLimit, 5*time.Second
	}
	servers := []*server{w.start(shared), w.start(shared), w.start(shared)}
	l := newScaleLoad(servers)
	t.Cleanup(l.client.CloseIdleConnections)

	// Seeds and tokens, made here: testing.T stays on this goroutine.
	owner := "scale-owner"
	locID := w.seedLocation(owner)
	var businessID string
	if err := w.db.QueryRow(context.Background(), `SELECT business_id::text FROM business_locations WHERE id = $1`, locID).Scan(&businessID); err != nil {
		t.Fatal(err)
	}
	// The callers of searches are this run's own, so that another run of the
	// test on the same Redis counts apart.
	run := make([]byte, 4)
	rand.Read(run)
	ownerTok, reception, limited := w.token(owner), w.token("reception"), w.token(fmt.Sprintf("scale-limited-%x", run))
	uploaders := []string{w.token("uploader-0"), w.token("uploader-1")}
	searchers := make([]string, 200) // each makes fewer searches than the limit
	for i := range searchers {
		searchers[i] = w.token(fmt.Sprintf("searcher-%d-%x", i, run))
	}

	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	worker := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}

	// Uploads, each then downloaded from every instance.
	var (
		upMu    sync.Mutex
		uploads []scaleUpload
	)
	for u, tok := range uploaders {
		worker(func() {
			for n := 0; pace(ctx, 50*time.Millisecond); n++ {
				size := 1 + (n*7919+u*104729)%(96<<10)
				content := make([]byte, size)
				rand.Read(content)
				content = append([]byte("%PDF-1.7\n"), content...)
				fields := fileFields(fmt.Sprintf("scan-%d-%d.pdf", u, n), "application/pdf", content)
				if n%2 == 1 {
					fields = fileFields(fmt.Sprintf("scan-%d-%d.pdf", u, n), "application/pdf", content, field{"isEncrypted", "true"})
				}
				body, ct := scaleMultipart(fields)
				r, ok := l.send("upload", l.pick(), "POST", "/cloud-blob/upload", tok, body, []int{201}, "Content-Type", ct)
				if !ok {
					continue
				}
				var dto struct {
					ID     int64  `json:"id"`
					SHA256 string `json:"sha256"`
				}
				if err := json.Unmarshal(r.body, &dto); err != nil || dto.SHA256 != sha(content) {
					l.failf("upload: answer %s, want sha256 %s", r.body, sha(content))
					continue
				}
				up := scaleUpload{id: dto.ID, token: tok, sha: dto.SHA256}
				upMu.Lock()
				uploads = append(uploads, up)
				upMu.Unlock()
				for i := range servers {
					scaleDownload(l, i, up)
				}
			}
		})
	}

	// Business reads and writes on one seeded business, from every instance.
	var (
		bizMu sync.Mutex
		names = map[string]bool{"Clinic": true}
	)
	days := []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	for b := range 2 {
		worker(func() {
			var hours []int64
			for n := 0; pace(ctx, 15*time.Millisecond); n++ {
				biz := []string{"user-type", "business", "Content-Type", "application/json"}
				day := days[(n*3+b)%len(days)]
				switch n % 5 {
				case 0:
					l.send("business", l.pick(), "GET", "/business/"+businessID, ownerTok, nil, []int{200}, biz...)
				case 1:
					name := fmt.Sprintf("Clinic %d-%d", b, n)
					bizMu.Lock()
					names[name] = true
					bizMu.Unlock()
					l.send("business", l.pick(), "PATCH", "/business/"+businessID, ownerTok, []byte(fmt.Sprintf(`{"name":%q}`, name)), []int{200}, biz...)
				case 2:
					r, ok := l.send("business", l.pick(), "GET", fmt.Sprintf("/business/location/%d/operating-hours", locID), ownerTok, nil, []int{200}, biz...)
					if ok {
						hours = scaleHourIDs(r.body)
					}
				case 3:
					body := fmt.Sprintf(`{"businessLocationId":%d,"operatingHours":[{"day":%q,"start_time":"09:00","end_time":"17:00"}]}`, locID, day)
					l.send("business", l.pick(), "POST", "/business/operating-hours/add", ownerTok, []byte(body), []int{201, 409}, biz...)
				case 4:
					if len(hours) == 0 {
						continue
					}
					body := fmt.Sprintf(`{"id":%d,"day":%q,"start_time":"08:%02d","end_time":"18:00"}`, hours[n%len(hours)], day, n%60)
					l.send("business", l.pick(), "PUT", "/business/operating-hours/update", ownerTok, []byte(body), []int{200, 409}, biz...)
				}
			}
		})
	}

	// Searches by callers who stay under the limit, shared cache.
	queries := []string{"Ana", "Lopez", "Baker", "family:Lopez"}
	worker(func() {
		for n := 0; n < len(searchers)*(scaleOutSearchLimit-1) && pace(ctx, 40*time.Millisecond); n++ {
			body := fmt.Sprintf(`{"query":%q}`, queries[n%len(queries)])
			l.send("search", l.pick(), "POST", "/api/v1/search", searchers[n/(scaleOutSearchLimit-1)], []byte(body), []int{200}, "Content-Type", "application/json")
		}
	})

	// One caller over its limit, one request at a time, so the order of its
	// answers is the order of its counts.
	var limitedReplies []scaleReply
	worker(func() {
		for n := 0; pace(ctx, 100*time.Millisecond); n++ {
			body := fmt.Sprintf(`{"query":%q}`, queries[n%len(queries)])
			r, ok := l.send("limited", l.pick(), "POST", "/api/v1/search", limited, []byte(body), []int{200, 429}, "Content-Type", "application/json")
			if ok {
				limitedReplies = append(limitedReplies, r)
			}
		}
	})

	// Bookings: three workers walk the same slots in the same order, each
	// sending a slot to another instance, 30 or 60 minutes long, so each
	// slot is fought over by all three instances at once.
	var booked atomic.Int64
	const slotsPerDay = 20 // 08:00 to 18:00, every 30 minutes
	for k := range 3 {
		worker(func() {
			for n := 0; pace(ctx, 5*time.Millisecond); n++ {
				slot := n % (scaleOutAgents * 5 * slotsPerDay)
				agent := agents[slot%scaleOutAgents]
				day := 1 + slot/scaleOutAgents/slotsPerDay
				minute := (slot / scaleOutAgents % slotsPerDay) * 30
				body := scaleSlot(agent, day, minute, 30+30*(k%2))
				r, ok := l.send("booking", (n+k)%len(servers), "POST", "/appointment/customer", reception, []byte(body), []int{201, 409}, "Content-Type", "application/json")
				if ok && r.status == 201 {
					booked.Add(1)
				}
			}
		})
	}

	wg.Wait()
	took := time.Since(start)
	t.Logf("load ran %s on %d instances; %s", took.Round(time.Millisecond), len(servers), l.figures())

	// Every upload, from every instance, with its SHA-256; and no orphan.
	for i := range servers {
		worker(func() {
			for _, up := range uploads {
				scaleDownload(l, i, up)
			}
		})
	}
	wg.Wait()
	if len(uploads) == 0 {
		l.failf("no upload was made")
	}
	if rows, objects := w.rows(), scaleObjects(t, w); rows != len(uploads) || objects != rows {
		l.failf("%d uploads, %d blob entries, %d objects: want them equal", len(uploads), rows, objects)
	}

	// No double booking: no two booked appointments of an agent overlap, and
	// the EHR holds every 201.
	total := 0
	for _, agent := range agents {
		appts := scaleBooked(l, agent, reception)
		total += len(appts)
		for i := 1; i < len(appts); i++ {
			if appts[i].Start.Before(appts[i-1].End) {
				l.failf("double booking of %s: %s–%s and %s–%s", agent, appts[i-1].Start, appts[i-1].End, appts[i].Start, appts[i].End)
			}
		}
	}
	if total != int(booked.Load()) || total == 0 {
		l.failf("%d bookings answered 201, %d booked appointments in the EHR", booked.Load(), total)
	}

	// The limit held once across the instances: in each window exactly
	// scaleOutSearchLimit answers of 200 (the last may be short), then 429
	// with Retry-After until a window later.
	scaleCheckLimit(l, limitedReplies)

	// The business: one entry per day, and the name one of those written.
	r, ok := l.send("business", 0, "GET", fmt.Sprintf("/business/location/%d/operating-hours", locID), ownerTok, nil, []int{200}, "user-type", "business")
	if ok {
		var env struct {
			Data []struct{ Day string }
		}
		json.Unmarshal(r.body, &env)
		seen := map[string]bool{}
		for _, h := range env.Data {
			if seen[h.Day] {
				l.failf("two operating-hours entries for %s: %s", h.Day, r.body)
			}
			seen[h.Day] = true
		}
	}
	if r, ok := l.send("business", 1, "GET", "/business/"+businessID, ownerTok, nil, []int{200}, "user-type", "business"); ok {
		var env struct{ Data struct{ Name string } }
		json.Unmarshal(r.body, &env)
		if !names[env.Data.Name] {
			l.failf("business name %q was never written", env.Data.Name)
		}
	}

	t.Logf("%d uploads (each read from %d instances twice), %d bookings, %d answers to the limited caller, %d EHR searches",
		len(uploads), len(servers), total, len(limitedReplies), search.calls.Load())
	for i, f := range l.failures {
		if i == 20 {
			t.Errorf("… and %d more", len(l.failures)-20)
			break
		}
		t.Error(f)
	}
}

// scaleMultipart is an upload form, built off the test's goroutine.
func scaleMultipart(fields []field) ([]byte, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if f.name == "file" {
			p, _ := mw.CreateFormFile("file", "ignored-client-name.bin")
			io.WriteString(p, f.value)
			continue
		}
		mw.WriteField(f.name, f.value)
	}
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// scaleDownload reads up from instance i and checks its SHA-256.
func scaleDownload(l *scaleLoad, i int, up scaleUpload) {
	path := fmt.Sprintf("/cloud-blob/download/%d", up.id)
	r, ok := l.send("download", i, "GET", path, up.token, nil, []int{200})
	if ok && (sha(r.body) != up.sha || r.header.Get("ETag") != `"`+up.sha+`"`) {
		l.fail("download", i, "GET", path, fmt.Sprintf("%d bytes with sha256 %s, ETag %s, want %s", len(r.body), sha(r.body), r.header.Get("ETag"), up.sha))
	}
}

// scaleHourIDs are the ids of an operating-hours listing.
func scaleHourIDs(body []byte) []int64 {
	var env struct {
		Data []struct{ ID int64 }
	}
	json.Unmarshal(body, &env)
	ids := make([]int64, len(env.Data))
	for i, h := range env.Data {
		ids[i] = h.ID
	}
	return ids
}

type scaleAppointment struct {
	Start, End time.Time
}

// scaleBooked lists the agent's booked appointments, every page, by start.
func scaleBooked(l *scaleLoad, agent, token string) []scaleAppointment {
	var all []scaleAppointment
	for page := 1; ; page++ {
		r, ok := l.send("verify", 0, "GET", fmt.Sprintf("/appointment?agentId=%s&status=booked&page=%d&limit=100", agent, page), token, nil, []int{200})
		if !ok {
			return all
		}
		var env struct {
			Data struct {
				Items      []scaleAppointment
				TotalCount int
			}
		}
		if err := json.Unmarshal(r.body, &env); err != nil {
			l.failf("appointments of %s: %v", agent, err)
			return all
		}
		all = append(all, env.Data.Items...)
		if len(env.Data.Items) == 0 || len(all) >= env.Data.TotalCount {
			if len(all) != env.Data.TotalCount {
				l.failf("appointments of %s: %d listed, totalCount %d", agent, len(all), env.Data.TotalCount)
			}
			break
		}
	}
	sort.Slice(all, func(a, b int) bool { return all[a].Start.Before(all[b].Start) })
	return all
}

// scaleCheckLimit checks the limited caller's answers, in order: runs of
// exactly scaleOutSearchLimit 200s (the last may be shorter), each run a
// fixed window after the previous one began, and every 429 with a
// Retry-After of at most the window.
func scaleCheckLimit(l *scaleLoad, replies []scaleReply) {
	var (
		run      int
		runStart time.Time
		windows  int
		limited  int
	)
	for i, r := range replies {
		switch r.status {
		case 200:
			if run == 0 {
				if windows > 0 && r.done.Sub(runStart) < time.Minute {
					l.failf("limited caller: a new window %s after the last began (answer %d, from instance %d; the 429 before said Retry-After %s)",
						r.done.Sub(runStart), i, r.instance, replies[i-1].header.Get("Retry-After"))
				}
				windows++
				runStart = r.sent
			}
			run++
			if run > scaleOutSearchLimit {
				l.failf("limited caller: answer %d is 200 number %d in one window, limit %d", i, run, scaleOutSearchLimit)
			}
		case 429:
			limited++
			if run != 0 && run != scaleOutSearchLimit {
				l.failf("limited caller: 429 after %d answers of 200 in the window, limit %d", run, scaleOutSearchLimit)
			}
			if windows == 0 {
				l.failf("limited caller: 429 before any 200")
			}
			run = 0
			if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
				l.failf("limited caller: 429 with Retry-After %q", r.header.Get("Retry-After"))
			}
		}
	}
	if limited == 0 {
		l.failf("the limited caller was never limited in %d searches", len(replies))
	}
}

// scaleObjects counts the objects in every container's bucket, every page
// of the listing.
func scaleObjects(t *testing.T, w *world) int {
	t.Helper()
	n := 0
	for _, c := range storage.Containers {
		pages := awss3.NewListObjectsV2Paginator(w.s3Client(), &awss3.ListObjectsV2Input{Bucket: aws.String(w.s3.BucketPrefix + string(c))})
		for pages.HasMorePages() {
			out, err := pages.NextPage(context.Background())
			if err != nil {
				t.Fatalf("list %s: %v", c, err)
			}
			n += len(out.Contents)
		}
	}
	return n
}
