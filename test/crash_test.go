package test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/test/pgtest"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// The burst of TestEvents_NothingLostWhenAnInstanceIsKilled.
const (
	crashChanges   = 1000 // acknowledged changes in all
	crashKillAfter = 400  // instance A is killed once this many are acknowledged
	crashWorkers   = 8
	// crashReceiverDelay keeps deliveries in flight: the receiver records
	// a request at once and answers after this, so A dies holding some.
	crashReceiverDelay = 20 * time.Millisecond
	crashDrainWithin   = 30 * time.Second
)

// TestEvents_NothingLostWhenAnInstanceIsKilled kills an instance (the real
// binary, SIGKILL) in the middle of a burst of 1,000 changes and starts
// another on the same database: every event reaches the receiver at least
// once (it dedups by webhook-id), and none is invented.
func TestEvents_NothingLostWhenAnInstanceIsKilled(t *testing.T) {
	bin := carebridgeBin(t)
	dbURL := pgtest.New(t)
	tmp := t.TempDir()
	env := crashEnv(tmp, dbURL)
	cmd := func(args ...string) []byte {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = env
		out, err := c.Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("carebridge %v: %v\n%s", args, err, exit.Stderr)
			}
			t.Fatalf("carebridge %v: %v", args, err)
		}
		return out
	}

	rcv := &crashReceiver{delay: crashReceiverDelay, got: map[string][]byte{}}
	hook := httptest.NewServer(rcv)
	t.Cleanup(hook.Close)

	var biz, sub struct{ ID, Secret string }
	if err := json.Unmarshal(cmd("admin", "create-business", "--name", "Crash Clinic", "--email", "crash@example.com", "--owner", "owner"), &biz); err != nil || biz.ID == "" {
		t.Fatalf("create-business: %v", err)
	}
	if err := json.Unmarshal(cmd("admin", "add-webhook", "--url", hook.URL, "--events", "*"), &sub); err != nil || !strings.HasPrefix(sub.Secret, "whsec_") {
		t.Fatalf("add-webhook: %v %q", err, sub.Secret)
	}
	secret, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sub.Secret, "whsec_"))
	if err != nil {
		t.Fatalf("secret: %v", err)
	}
	rcv.secret = secret
	token := strings.TrimSpace(string(cmd("dev-token", "--sub", "owner", "--ttl", "1h")))

	db, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}

	a := startCrashInstance(t, bin, env, tmp, "a")
	var b *crashInstance
	t.Cleanup(func() {
		if t.Failed() {
			a.logTail(t)
			if b != nil {
				b.logTail(t)
			}
		}
	})

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: crashWorkers}}
	var (
		target   atomic.Pointer[crashInstance] // where changes go
		killed   atomic.Bool                   // set just before A is killed
		bReady   = make(chan struct{})         // closed once B is healthy and the target
		killNow  = make(chan struct{})         // closed by the change that makes crashKillAfter
		slots    atomic.Int64                  // changes handed to workers
		acked    atomic.Int64                  // acknowledged changes
		inflight atomic.Int64                  // requests under way
		lost     atomic.Int64                  // requests to A cut off by the kill: outcome unknown
		mu       sync.Mutex
		ackedBy  = map[string]int{}   // instance → acknowledged changes
		locs     = map[int64]string{} // acknowledged location → instance
		failures []string             // requests that failed for another reason than the kill
	)
	target.Store(a)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	start := time.Now()
	for w := range crashWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := slots.Add(1); n <= crashChanges; n = slots.Add(1) {
				for try := 0; ; try++ {
					inst := target.Load()
					inflight.Add(1)
					loc, err := crashCreateLocation(client, inst.base, token, biz.ID, fmt.Sprintf("Clinic %d-%d (worker %d)", n, try, w))
					inflight.Add(-1)
					var status *crashStatusError
					switch {
					case err == nil:
						mu.Lock()
						ackedBy[inst.name]++
						locs[loc] = inst.name
						mu.Unlock()
						if acked.Add(1) == crashKillAfter {
							close(killNow)
						}
					case inst == a && killed.Load() && !errors.As(err, &status):
						// Cut off by the kill: it may or may not have
						// committed. Retried on B as a new change.
						lost.Add(1)
						<-bReady
						continue
					default:
						fail("%s: %v", inst.name, err)
						return
					}
					break
				}
			}
		}()
	}
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()

	var k struct {
		ackedByA, inflight, received, events, leased int
		at                                           time.Time // the database's clock
	}
	select {
	case <-killNow:
	case <-workersDone:
		t.Fatalf("the burst ended before the kill: %v", failures)
	}
	k.received, _ = rcv.counts()
	k.inflight = int(inflight.Load())
	killed.Store(true)
	if err := a.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatalf("kill A: %v", err)
	}
	<-a.done
	mu.Lock()
	k.ackedByA = ackedBy[a.name]
	mu.Unlock()
	// A's transactions in progress died with its connections; what it
	// committed is in the tables. The deliveries it had claimed and not
	// settled stay leased to it (next_attempt_at in the future).
	if err := db.QueryRow(context.Background(), `
		SELECT now(), (SELECT count(*) FROM events),
			(SELECT count(*) FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at > now())`).
		Scan(&k.at, &k.events, &k.leased); err != nil {
		t.Fatal(err)
	}
	b = startCrashInstance(t, bin, env, tmp, "b")
	target.Store(b)
	close(bReady)
	<-workersDone
	burst := time.Since(start)
	if len(failures) > 0 {
		t.Fatalf("%d changes failed, first: %s", len(failures), failures[0])
	}

	// A died holding leases on the deliveries it had claimed; they become
	// due again when the lease ends (3×timeout+30 s = 60 s by default,
	// which adapters/postgres tests check with a short lease). Ending them
	// now stands for waiting that out. Only A's leases move: B's claims
	// came after the kill.
	tag, err := db.Exec(context.Background(), `
		UPDATE webhook_deliveries SET next_attempt_at = now()
		WHERE state = 'pending' AND next_attempt_at > now() AND updated_at <= $1`, k.at)
	if err != nil {
		t.Fatal(err)
	}
	expired := tag.RowsAffected()
	drainStart := time.Now()
	for {
		pending := count(`SELECT count(*) FROM webhook_deliveries WHERE state <> 'delivered'`)
		if pending == 0 {
			break
		}
		if time.Since(drainStart) > crashDrainWithin {
			t.Fatalf("%d deliveries still not delivered after %s", pending, crashDrainWithin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	drain := time.Since(drainStart)

	// What reached the receiver, by webhook-id.
	rcv.mu.Lock()
	got := rcv.got
	dups, bad := rcv.dups, rcv.bad
	rcv.mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("%d bad deliveries, first: %s", len(bad), bad[0])
	}
	type body struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			LocationID int64 `json:"locationId"`
		} `json:"data"`
	}
	received := map[int64]string{} // location → webhook-id of its location.created
	for id, raw := range got {
		var e body
		if err := json.Unmarshal(raw, &e); err != nil || e.ID != id {
			t.Fatalf("delivery %s: body %s (%v)", id, raw, err)
		}
		if e.Type == "location.created" {
			received[e.Data.LocationID] = id
		}
	}

	// (1) Every acknowledged change's event reached the receiver.
	missing := 0
	for loc := range locs {
		if _, ok := received[loc]; !ok {
			missing++
			if missing <= 5 {
				t.Errorf("acknowledged location %d (by %s): no location.created received", loc, locs[loc])
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged changes have no event at the receiver", missing, len(locs))
	}

	// (2) Every event in the outbox reached the receiver, byte for byte,
	// and the receiver got nothing else.
	rows, _ := db.Query(context.Background(), `SELECT id, type, body FROM events ORDER BY seq`)
	type stored struct {
		id, typ string
		body    []byte
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stored, error) {
		var s stored
		err := r.Scan(&s.id, &s.typ, &s.body)
		return s, err
	})
	if err != nil {
		t.Fatal(err)
	}
	inTable := map[string]bool{}
	created := map[int64]int{} // location → its location.created events
	for _, e := range events {
		inTable[e.id] = true
		if raw, ok := got[e.id]; !ok {
			t.Errorf("event %s (%s) never reached the receiver", e.id, e.typ)
		} else if !bytes.Equal(raw, e.body) {
			t.Errorf("event %s: received %s, stored %s", e.id, raw, e.body)
		}
		if e.typ == "location.created" {
			var b body
			if err := json.Unmarshal(e.body, &b); err != nil {
				t.Fatalf("event %s: %v", e.id, err)
			}
			created[b.Data.LocationID]++
		}
	}
	for id := range got {
		if !inTable[id] {
			t.Errorf("received %s, which is no event in the outbox (invented)", id)
		}
	}
	if n := count(`SELECT count(*) FROM webhook_deliveries`); n != len(events) {
		t.Errorf("%d deliveries for %d events and one subscription", n, len(events))
	}

	// (3) Every location in the database has exactly one location.created
	// event (one committed just before the kill included), and every such
	// event is of a location that exists (a change that rolled back has
	// none).
	rows, _ = db.Query(context.Background(), `SELECT id FROM business_locations`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	exists := map[int64]bool{}
	for _, id := range ids {
		exists[id] = true
		if created[id] != 1 {
			t.Errorf("location %d has %d location.created events", id, created[id])
		}
	}
	for loc := range created {
		if !exists[loc] {
			t.Errorf("location.created for location %d, which does not exist", loc)
		}
	}
	for loc := range locs {
		if !exists[loc] {
			t.Errorf("acknowledged location %d is not in the database", loc)
		}
	}
	// A change cut off by the kill committed or not; nothing else made a
	// location.
	unacked := len(ids) - len(locs)
	if unacked < 0 || unacked > int(lost.Load()) {
		t.Errorf("%d locations, %d acknowledged, %d cut off by the kill", len(ids), len(locs), lost.Load())
	}

	// The kill came in the middle of the burst, with deliveries under way.
	if k.ackedByA <= 0 || k.ackedByA >= crashChanges {
		t.Errorf("A acknowledged %d of %d changes before its death", k.ackedByA, crashChanges)
	}
	// The receiver records a request as it arrives and answers it 20 ms
	// later, so it may have seen every event A committed while A still
	// held deliveries it never settled: what must hold is that A died
	// holding some.
	if k.received <= 0 || k.leased <= 0 {
		t.Errorf("at the kill the receiver had %d of the %d events A committed and A held %d deliveries: want some received and some held",
			k.received, k.events, k.leased)
	}

	t.Logf("changes acknowledged: %d (A %d, B %d); in flight at the kill: %d, cut off by it (outcome unknown): %d, of which committed: %d",
		len(locs), k.ackedByA, ackedBy[b.name], k.inflight, lost.Load(), unacked)
	t.Logf("at the kill: %d events committed, %d received, %d deliveries leased by A (%d still leased after the burst, their lease ended by SQL)",
		k.events, k.received, k.leased, expired)
	t.Logf("events: %d, received: %d distinct, %d duplicates; burst %s, drain %s after the leases ended",
		len(events), len(got), dups, burst.Round(time.Millisecond), drain.Round(time.Millisecond))
}

// crashCreateLocation creates a location of business and returns its id.
// crashEnv is the environment of the binary's instances: dev tokens, the
// database at dbURL, blobs and the dev key under dir.
func crashEnv(dir, dbURL string) []string {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"AUTH_DEV_MODE=true",
		"DEV_KEY_FILE=" + filepath.Join(dir, "dev.pem"),
		"DATABASE_URL=" + dbURL,
		"CLOUD_STORAGE_CONNECTION_STRING=file://" + filepath.Join(dir, "blobs"),
		"EHR_CREDENTIALS_KEY=" + base64.StdEncoding.EncodeToString(key),
	}
}

// TestBooking_NothingLostWhenAnInstanceIsKilledMidBooking kills an instance
// (SIGKILL) after the EHR created a booking's appointment and before the
// instance recorded it; another instance on the same database records it
// with its event, and the repeat with the same Idempotency-Key answers it.
func TestBooking_NothingLostWhenAnInstanceIsKilledMidBooking(t *testing.T) {
	bin := carebridgeBin(t)
	dbURL := pgtest.New(t)
	tmp := t.TempDir()
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	ehrFile := filepath.Join(tmp, "ehr.yaml")
	yaml := fmt.Sprintf("ehr_systems:\n  - name: peer\n    adapter: wsbot\n    base_url: %s\n    timeout: 60000\nintegration:\n  ehr: peer\n", bot.URL())
	if err := os.WriteFile(ehrFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(crashEnv(tmp, dbURL), "EHR_CONFIG="+ehrFile)
	c := exec.Command(bin, "dev-token", "--sub", "pat-crash", "--scope", "patient/Appointment.cus", "--ttl", "1h")
	c.Env = env
	raw, err := c.Output()
	if err != nil {
		t.Fatalf("dev-token: %v", err)
	}
	token := strings.TrimSpace(string(raw))

	a := startCrashInstance(t, bin, env, tmp, "a")
	t.Cleanup(func() {
		if t.Failed() {
			a.logTail(t)
		}
	})
	// The EHR stores the appointment and never answers: A is killed while
	// the booking waits for that answer, with nothing of it recorded.
	bot.SetSilent("appointments.create", true)
	booking := slotAt(drAna.ID, 9, 30)
	post := func(base string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest("POST", base+"/appointment/customer", strings.NewReader(booking))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "crash-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, body, err
	}
	cut := make(chan error, 1)
	go func() { _, _, err := post(a.base); cut <- err }()
	deadline := time.Now().Add(30 * time.Second)
	for bot.AppointmentCount() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the booking never reached the EHR")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	if err := <-cut; err == nil {
		t.Fatal("the booking was answered although its instance was killed")
	}
	bot.SetSilent("appointments.create", false)

	db, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	count := func(query string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(context.Background(), query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	if h, b := count(`SELECT count(*) FROM booking_holds`), count(`SELECT count(*) FROM appointment_bookings`); h != 1 || b != 0 {
		t.Fatalf("after the kill: %d holds, %d bookings; want the pending one only", h, b)
	}
	// The killed instance's lease (2 min) is ended rather than waited out;
	// B reconciles as it starts.
	if _, err := db.Exec(context.Background(), `UPDATE booking_holds SET lease_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	b := startCrashInstance(t, bin, env, tmp, "b")
	t.Cleanup(func() {
		if t.Failed() {
			b.logTail(t)
		}
	})
	deadline = time.Now().Add(30 * time.Second)
	for count(`SELECT count(*) FROM appointment_bookings`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("B never recorded the booking")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h, e := count(`SELECT count(*) FROM booking_holds`), count(`SELECT count(*) FROM events WHERE type = 'appointment.booked'`); h != 0 || e != 1 {
		t.Fatalf("after the reconcile: %d holds, %d appointment.booked events; want 0 and 1", h, e)
	}
	resp, body, err := post(b.base)
	if err != nil || resp.StatusCode != 201 || resp.Header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("the repeat with the same key: %v %v %s", resp, err, body)
	}
	if n := bot.AppointmentCount(); n != 1 {
		t.Fatalf("the EHR holds %d appointments, want 1", n)
	}
}

func crashCreateLocation(c *http.Client, base, token, business, name string) (int64, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	general, _ := json.Marshal(map[string]string{"name": name, "timezone": "America/Chicago"})
	mw.WriteField("generalInfo", string(general))
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, base+"/business/location/"+business+"/", &buf)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("user-type", "business")
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var env struct {
		Data struct {
			LocationID int64 `json:"locationId"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &env) != nil || env.Data.LocationID == 0 {
		return 0, &crashStatusError{resp.StatusCode, raw}
	}
	return env.Data.LocationID, nil
}

// crashStatusError is an answer other than 201 with a location id: the
// instance answered, so the kill did not cut the request off.
type crashStatusError struct {
	status int
	body   []byte
}

func (e *crashStatusError) Error() string {
	return fmt.Sprintf("create location: %d %s", e.status, e.body)
}

// crashReceiver is a webhook receiver: it checks each delivery's
// signature, records its body by webhook-id (at once, before it answers,
// so a delivery whose sender dies before the answer still counts) and
// counts the duplicates.
type crashReceiver struct {
	secret []byte
	delay  time.Duration

	mu   sync.Mutex
	got  map[string][]byte
	dups int
	bad  []string
}

func (r *crashReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return // the sender went away
	}
	id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
	m := hmac.New(sha256.New, r.secret)
	fmt.Fprintf(m, "%s.%s.%s", id, ts, body)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	r.mu.Lock()
	switch prev, seen := r.got[id]; {
	case req.Header.Get("webhook-signature") != want:
		r.bad = append(r.bad, fmt.Sprintf("%s: signature %q", id, req.Header.Get("webhook-signature")))
	case seen && !bytes.Equal(prev, body):
		r.bad = append(r.bad, fmt.Sprintf("%s: a different body on redelivery", id))
	case seen:
		r.dups++
	default:
		r.got[id] = body
	}
	r.mu.Unlock()
	time.Sleep(r.delay)
	w.WriteHeader(http.StatusOK)
}

// counts returns how many distinct events and duplicates were received.
func (r *crashReceiver) counts() (distinct, dups int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got), r.dups
}

// crashInstance is the carebridge binary running as serve.
type crashInstance struct {
	name, base, log string
	cmd             *exec.Cmd
	done            chan struct{} // closed once it exited
}

// startCrashInstance starts bin as serve with env on a free port, logging
// to name.log in dir, and waits until it is healthy. It is stopped (if
// still running) when the test ends.
func startCrashInstance(t *testing.T, bin string, env []string, dir, name string) *crashInstance {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	in := &crashInstance{name: name, base: "http://" + addr, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(in.log)
	if err != nil {
		t.Fatal(err)
	}
	in.cmd = exec.Command(bin, "serve")
	in.cmd.Env = append(env[:len(env):len(env)], "HTTP_ADDR="+addr)
	in.cmd.Dir = dir
	in.cmd.Stdout, in.cmd.Stderr = logf, logf
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { in.cmd.Wait(); logf.Close(); close(in.done) }()
	t.Cleanup(func() {
		in.cmd.Process.Signal(os.Interrupt)
		select {
		case <-in.done:
		case <-time.After(15 * time.Second):
			in.cmd.Process.Kill()
			<-in.done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(in.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return in
			}
		}
		select {
		case <-in.done:
			in.logTail(t)
			t.Fatalf("instance %s exited before it was healthy", name)
		default:
		}
		if time.Now().After(deadline) {
			in.logTail(t)
			t.Fatalf("instance %s not healthy after 60 s", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logTail logs the last lines of the instance's log.
func (in *crashInstance) logTail(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(in.log)
	if err != nil {
		t.Logf("log of %s: %v", in.name, err)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	lines = lines[max(0, len(lines)-40):]
	t.Logf("last %d lines of instance %s's log:\n%s", len(lines), in.name, strings.Join(lines, "\n"))
}
