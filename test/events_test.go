package test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core/event"
	"github.com/carebridge/carebridge/test/testenv"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// --- A Standard Webhooks verifier, written from the specification (it
// shares no code with adapters/webhook).

// maxSkew is how far a delivery's timestamp may be from the receiver's
// clock.
const maxSkew = 5 * time.Minute

// verifyWebhook checks one delivery as a Standard Webhooks receiver does:
// the secret is "whsec_" and base64; webhook-signature lists
// space-separated "v1,<base64 HMAC-SHA256(secret, id.timestamp.body)>"
// entries, one of which must match; the timestamp is within five minutes
// of now; the body is JSON whose id is the webhook-id.
func verifyWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return errors.New("secret does not start with whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		return fmt.Errorf("secret is not base64: %v", err)
	}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		return fmt.Errorf("Content-Type %q", h.Get("Content-Type"))
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("missing headers: id %q, timestamp %q, signature %q", id, ts, sigs)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q is not Unix seconds", ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxSkew || d < -maxSkew {
		return fmt.Errorf("timestamp %s is %s away from now", ts, d)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	matched := false
	for _, entry := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("no v1 signature of %q matches", sigs)
	}
	var ev struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return fmt.Errorf("body is not JSON: %v", err)
	}
	if ev.ID != id {
		return fmt.Errorf("body id %q is not webhook-id %q", ev.ID, id)
	}
	return nil
}

// The verifier accepts the specification's example and refuses what it
// must, so a delivery it accepts is one any receiver accepts.
func TestEvents_VerifierFollowsStandardWebhooks(t *testing.T) {
	// The example of the Standard Webhooks specification.
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	at := time.Unix(1614265330, 0)
	// Its body has no id: check the signature alone with a body that has.
	if err := verifyWebhook(secret, h, body, at); err == nil || !strings.Contains(err.Error(), "body id") {
		t.Fatalf("the example's signature: %v", err)
	}

	key := []byte("0123456789abcdef0123456789abcdef")
	sec := "whsec_" + base64.StdEncoding.EncodeToString(key)
	sign := func(id string, ts int64, b []byte) string {
		m := hmac.New(sha256.New, key)
		fmt.Fprintf(m, "%s.%d.%s", id, ts, b)
		return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	now := time.Now()
	good := []byte(`{"id":"evt_1","type":"business.updated"}`)
	mk := func(id string, ts int64, sig, ct string) http.Header {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		h.Set("webhook-signature", sig)
		h.Set("Content-Type", ct)
		return h
	}
	if err := verifyWebhook(sec, mk("evt_1", now.Unix(), sign("evt_1", now.Unix(), good), "application/json"), good, now); err != nil {
		t.Fatalf("a good delivery: %v", err)
	}
	if err := verifyWebhook(sec, mk("evt_1", now.Unix(), "v1,bm9wZQ== v2,x "+sign("evt_1", now.Unix(), good), "application/json; charset=utf-8"), good, now); err != nil {
		t.Fatalf("a list of signatures: %v", err)
	}
	old := now.Add(-6 * time.Minute).Unix()
	for what, c := range map[string]struct {
		h    http.Header
		body []byte
		sec  string
	}{
		"tampered body":     {mk("evt_1", now.Unix(), sign("evt_1", now.Unix(), good), "application/json"), []byte(`{"id":"evt_1","type":"blob.deleted"}`), sec},
		"old timestamp":     {mk("evt_1", old, sign("evt_1", old, good), "application/json"), good, sec},
		"other id":          {mk("evt_2", now.Unix(), sign("evt_2", now.Unix(), good), "application/json"), good, sec},
		"v2 only":           {mk("evt_1", now.Unix(), "v2,"+strings.TrimPrefix(sign("evt_1", now.Unix(), good), "v1,"), "application/json"), good, sec},
		"wrong secret":      {mk("evt_1", now.Unix(), sign("evt_1", now.Unix(), good), "application/json"), good, "whsec_" + base64.StdEncoding.EncodeToString([]byte("another key"))},
		"not JSON":          {mk("evt_1", now.Unix(), sign("evt_1", now.Unix(), good), "text/plain"), good, sec},
		"secret w/o prefix": {mk("evt_1", now.Unix(), sign("evt_1", now.Unix(), good), "application/json"), good, base64.StdEncoding.EncodeToString(key)},
	} {
		if err := verifyWebhook(c.sec, c.h, c.body, now); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
}

// --- A webhook receiver.

// delivery is one request a receiver took (answered 2xx).
type delivery struct {
	header http.Header
	body   []byte
	at     time.Time
	ev     eventJSON
}

// eventJSON is the contract's event body.
type eventJSON struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	OccurredAt string         `json:"occurredAt"`
	BusinessID *string        `json:"businessId"`
	Data       map[string]any `json:"data"`
}

// receiver records the events posted to it, once per webhook-id, and the
// number of attempts of each. fail, when set, may answer an attempt (the
// n-th of its webhook-id) itself instead, which then is not recorded.
type receiver struct {
	t    *testing.T
	srv  *httptest.Server
	fail func(n int, w http.ResponseWriter, r *http.Request) bool
	stop chan struct{} // closed when the test ends: handlers that hang return

	mu       sync.Mutex
	got      map[string]delivery // by webhook-id
	order    []string
	attempts map[string]int
	hits     int
}

func newReceiver(t *testing.T, fail func(n int, w http.ResponseWriter, r *http.Request) bool) *receiver {
	t.Helper()
	rc := &receiver{t: t, fail: fail, stop: make(chan struct{}), got: map[string]delivery{}, attempts: map[string]int{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	t.Cleanup(func() { close(rc.stop) }) // runs before Close
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := readAll(r)
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	rc.hits++
	rc.attempts[id]++
	n := rc.attempts[id]
	rc.mu.Unlock()
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if rc.fail != nil && rc.fail(n, w, r) {
		return
	}
	var ev eventJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if r.Method != http.MethodPost || dec.Decode(&ev) != nil {
		rc.t.Errorf("receiver: %s with a body not an event: %q", r.Method, body)
	}
	rc.mu.Lock()
	if _, dup := rc.got[id]; !dup { // at least once: a receiver dedups by webhook-id
		rc.got[id] = delivery{header: r.Header.Clone(), body: body, at: time.Now(), ev: ev}
		rc.order = append(rc.order, id)
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func readAll(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(r.Body)
	return buf.Bytes(), err
}

func (rc *receiver) url() string { return rc.srv.URL + "/hooks" }

// events returns what it took, in arrival order.
func (rc *receiver) events() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]delivery, len(rc.order))
	for i, id := range rc.order {
		out[i] = rc.got[id]
	}
	return out
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.order)
}

func (rc *receiver) requests() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.hits
}

// eventually polls cond until it holds or the time is up.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --- The admin CLI with an environment of the test's choosing.

// webhookKeyFor is the key the service seals webhook secrets with, given
// a service key (or, in earlier versions, the key material of
// EHR_CREDENTIALS_KEY): HMAC-SHA256 keyed with it, over the purpose.
func webhookKeyFor(material []byte) []byte {
	m := hmac.New(sha256.New, material)
	m.Write([]byte("carebridge/webhook-secrets/v1"))
	return m.Sum(nil)
}

// carebridgeEnv runs the carebridge command with DATABASE_URL and env
// ("NAME=value") set, and none of the key variables of the test's own
// environment; it returns standard output, standard error and the exit
// code.
func carebridgeEnv(t *testing.T, dbURL string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(carebridgeBin(t), args...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "EHR_CREDENTIALS_KEY" && name != "CLOUD_STORAGE_ENCRYPTION_KEY" && name != "SERVICE_KEYS" && name != "DATABASE_URL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "DATABASE_URL="+dbURL), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("carebridge %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), 0
}

// hooks is the webhook side of a world: the service keys the CLI and the
// apps share (SERVICE_KEYS; none: the key kept in PostgreSQL).
type hooks struct {
	w    *world
	keys []keyring.Named
}

func newHooks(w *world) *hooks {
	return &hooks{w: w, keys: []keyring.Named{{ID: "hooks", Key: key(7)}}}
}

// env is the CLI's SERVICE_KEYS.
func (h *hooks) env() []string {
	if len(h.keys) == 0 {
		return nil
	}
	list := make([]string, len(h.keys))
	for i, k := range h.keys {
		list[i] = k.ID + ":" + hex.EncodeToString(k.Key)
	}
	return []string{"SERVICE_KEYS=" + strings.Join(list, ",")}
}

// configure gives an app the service keys the CLI seals secrets under.
func (h *hooks) configure(c *app.Config) { c.ServiceKeys = h.keys }

// add subscribes url with add-webhook and returns the id and the secret.
func (h *hooks) add(url, events string, extra ...string) (string, string) {
	h.w.t.Helper()
	out, errOut, code := carebridgeEnv(h.w.t, h.w.dbURL, h.env(), append([]string{"admin", "add-webhook", "--url", url, "--events", events}, extra...)...)
	if code != 0 {
		h.w.t.Fatalf("add-webhook %s: exit %d: %s", url, code, errOut)
	}
	var sub map[string]string
	if err := json.Unmarshal([]byte(out), &sub); err != nil || len(sub) != 2 || sub["id"] == "" || !strings.HasPrefix(sub["secret"], "whsec_") {
		h.w.t.Fatalf("add-webhook printed %q", out)
	}
	return sub["id"], sub["secret"]
}

// addAll subscribes each receiver (url and events, then any other flags)
// with add-webhook, the commands at once, and returns the ids and the
// secrets in the same order.
func (h *hooks) addAll(specs ...[]string) ([]string, []string) {
	h.w.t.Helper()
	type result struct {
		out, errOut string
		code        int
	}
	results := make([]result, len(specs))
	var wg sync.WaitGroup
	for i, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"admin", "add-webhook", "--url", sp[0], "--events", sp[1]}, sp[2:]...)
			results[i].out, results[i].errOut, results[i].code = carebridgeEnv(h.w.t, h.w.dbURL, h.env(), args...)
		}()
	}
	wg.Wait()
	ids, secrets := make([]string, len(specs)), make([]string, len(specs))
	for i, r := range results {
		var sub map[string]string
		if r.code != 0 || json.Unmarshal([]byte(r.out), &sub) != nil || len(sub) != 2 || sub["id"] == "" || !strings.HasPrefix(sub["secret"], "whsec_") {
			h.w.t.Fatalf("add-webhook %v: exit %d, printed %q: %s", specs[i], r.code, r.out, r.errOut)
		}
		ids[i], secrets[i] = sub["id"], sub["secret"]
	}
	return ids, secrets
}

type deliveryJSON struct {
	ID             int64  `json:"id"`
	SubscriptionID string `json:"subscriptionId"`
	EventID        string `json:"eventId"`
	Type           string `json:"type"`
	State          string `json:"state"`
	Attempts       int    `json:"attempts"`
	LastStatus     int    `json:"lastStatus"`
	LastError      string `json:"lastError"`
}

// deliveries runs webhook-deliveries (with args) and returns them.
func (h *hooks) deliveries(args ...string) []deliveryJSON {
	h.w.t.Helper()
	out, errOut, code := carebridgeEnv(h.w.t, h.w.dbURL, nil, append([]string{"admin", "webhook-deliveries", "--limit", "10000"}, args...)...)
	if code != 0 {
		h.w.t.Fatalf("webhook-deliveries: exit %d: %s", code, errOut)
	}
	var ds []deliveryJSON
	if err := json.Unmarshal([]byte(out), &ds); err != nil {
		h.w.t.Fatalf("webhook-deliveries printed %q", out)
	}
	return ds
}

// --- The tests.

// want is an event the test caused.
type want struct {
	typ      string
	business string // "" for null
	data     map[string]any
}

func (wt want) String() string { return fmt.Sprintf("%s %q %v", wt.typ, wt.business, wt.data) }

// matches reports whether ev is the event wt, comparing times as instants.
func (wt want) matches(ev eventJSON) bool {
	if ev.Type != wt.typ || (ev.BusinessID == nil) != (wt.business == "") || ev.BusinessID != nil && *ev.BusinessID != wt.business {
		return false
	}
	if len(ev.Data) != len(wt.data) {
		return false
	}
	for k, v := range wt.data {
		got, ok := ev.Data[k]
		if !ok {
			return false
		}
		if tv, isTime := v.(time.Time); isTime {
			s, _ := got.(string)
			gt, err := time.Parse(time.RFC3339Nano, s)
			if err != nil || !gt.Equal(tv) {
				return false
			}
			continue
		}
		if v == nil {
			if got != nil {
				return false
			}
			continue
		}
		if v != anyValue && fmt.Sprint(got) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// anyValue matches any value of a data field.
const anyValue = "\x00any"

// checkReceived checks rc took exactly the wanted events (in any order),
// each signed with secret and free of patient data.
func checkReceived(t *testing.T, name string, rc *receiver, secret string, wants []want) {
	t.Helper()
	got := rc.events()
	left := slices.Clone(wants)
	for _, d := range got {
		if err := verifyWebhook(secret, d.header, d.body, d.at); err != nil {
			t.Errorf("%s: %s: signature: %v", name, d.ev.Type, err)
		}
		if _, err := time.Parse(time.RFC3339Nano, d.ev.OccurredAt); err != nil || !strings.HasPrefix(d.ev.ID, "evt_") {
			t.Errorf("%s: id %q occurredAt %q", name, d.ev.ID, d.ev.OccurredAt)
		}
		for _, m := range allMarkers {
			if strings.Contains(string(d.body), m) || strings.Contains(fmt.Sprint(d.header), m) {
				t.Errorf("%s: %s holds patient data %q: %s", name, d.ev.Type, m, d.body)
			}
		}
		i := slices.IndexFunc(left, func(wt want) bool { return wt.matches(d.ev) })
		if i < 0 {
			t.Errorf("%s: unexpected event %s", name, d.body)
			continue
		}
		left = slices.Delete(left, i, i+1)
	}
	for _, wt := range left {
		t.Errorf("%s: missing event %v", name, wt)
	}
}

func TestEvents_EveryChangeIsDeliveredSignedWithoutPatientData(t *testing.T) {
	w := newWorld(t)
	h := newHooks(w)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) {
		c.EHR = integrationFile(t, "wsbot", bot.URL(), "")
		h.configure(c)
	})
	biz, other := w.createBusiness("owner"), w.createBusiness("other")
	owner, staff := w.token("owner"), w.token("reception")

	// Before any subscription: nobody receives it.
	s.bdo("PATCH", "/business/"+biz, owner, map[string]string{"name": "Before"}).data(t, 200, "Business updated successfully")

	all, mine, booked := newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil)
	ids, secrets := h.addAll([]string{all.url(), "*"}, []string{mine.url(), "*", "--business", biz}, []string{booked.url(), "appointment.booked"})
	allID, mineID, bookedID := ids[0], ids[1], ids[2]
	allSecret, mineSecret, bookedSecret := secrets[0], secrets[1], secrets[2]

	// Every kind of change.
	s.bdo("PATCH", "/business/"+biz, owner, map[string]string{"name": "Austin Family Care"}).data(t, 200, "Business updated successfully")
	s.bdo("PATCH", "/business/"+other, w.token("other"), map[string]string{"name": "Elsewhere"}).data(t, 200, "Business updated successfully")
	loc := int64(s.bdo("POST", "/business/location/"+biz+"/", owner, locationForm(t, false, map[string]string{"name": "Main"}, nil, nil, "", "")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"].(float64))
	s.bdo("PUT", fmt.Sprintf("/business/location/%d/update", loc), owner, locationForm(t, true, map[string]string{"name": "Downtown"}, nil, nil, "", "")).
		data(t, 200, "Business location updated successfully")
	hours := s.bdo("POST", "/business/operating-hours/add", owner, map[string]any{"businessLocationId": loc,
		"operatingHours": []map[string]string{{"day": "Monday", "start_time": "09:00", "end_time": "17:00"}}}).
		data(t, 201, "Operating hours added successfully").(map[string]any)
	entry := int64(hours["operatingHours"].([]any)[0].(map[string]any)["id"].(float64))
	s.bdo("PUT", "/business/operating-hours/update", owner, map[string]any{"id": entry, "day": "Tuesday", "start_time": "08:00", "end_time": "12:00"}).
		data(t, 200, "Operating hours updated successfully")
	s.bdo("DELETE", "/business/operating-hours/delete", owner, map[string]any{"id": entry}).data(t, 200, "Operating hours deleted successfully")

	up := s.upload(owner, fileFields(markFilename, "text/plain", []byte("chart notes of "+markGiven+" "+markFamily), field{"businessLocationId", fmt.Sprint(loc)})...)
	if up.status != 201 {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	blob := up.json(t)
	blobID := int64(blob["id"].(float64))
	if r := s.do("DELETE", fmt.Sprintf("/cloud-blob/%d", blobID), owner, nil); r.status != 200 {
		t.Fatalf("delete blob: %d %s", r.status, r.body)
	}

	r, appt := s.ehrCall("POST", "/appointment/customer", staff, markedBooking(9), "Idempotency-Key", "events-1")
	if r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	apptID := appt["id"].(string)
	if again, _ := s.ehrCall("POST", "/appointment/customer", staff, markedBooking(9), "Idempotency-Key", "events-1"); again.status != 201 || again.header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.status, again.body)
	}
	if r, _ := s.ehrCall("POST", "/appointment/"+apptID+"/reschedule", staff, fmt.Sprintf(`{"start":%q,"end":%q}`, timeAt(10, 0), timeAt(10, 30))); r.status != 200 {
		t.Fatalf("reschedule: %d %s", r.status, r.body)
	}
	if r, _ := s.ehrCall("PUT", "/appointment/customer/"+apptID+"/cancel", staff, `{"reason":"`+markFamily+` is better"}`); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}

	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	locData := map[string]any{"locationId": loc}
	blobData := map[string]any{"blobId": blobID, "containerName": blob["containerName"], "businessLocationId": fmt.Sprint(loc)}
	ofBusiness := []want{
		{"business.updated", biz, map[string]any{"businessId": biz}},
		{"location.created", biz, locData},
		{"location.updated", biz, locData},
		{"operating_hours.changed", biz, locData},
		{"operating_hours.changed", biz, locData},
		{"operating_hours.changed", biz, locData},
		{"blob.uploaded", biz, blobData},
		{"blob.deleted", biz, blobData},
	}
	bookedEvent := want{"appointment.booked", "", map[string]any{"appointmentId": apptID, "agentId": "dr-ana", "status": "booked", "start": at(timeAt(9, 0)), "end": at(timeAt(9, 30)), "origin": "api"}}
	everything := append(slices.Clone(ofBusiness),
		want{"business.updated", other, map[string]any{"businessId": other}},
		bookedEvent,
		want{"appointment.rescheduled", "", map[string]any{"appointmentId": apptID, "agentId": "dr-ana", "status": anyValue, "start": at(timeAt(10, 0)), "end": at(timeAt(10, 30)), "origin": "api"}},
		want{"appointment.cancelled", "", map[string]any{"appointmentId": apptID, "agentId": "dr-ana", "status": "cancelled", "start": at(timeAt(10, 0)), "end": at(timeAt(10, 30)), "origin": "api"}},
	)

	// A subscription made now gets only what happens from now on.
	late := newReceiver(t, nil)
	_, lateSecret := h.add(late.url(), "*")
	s.bdo("PATCH", "/business/"+biz, owner, map[string]string{"name": "After"}).data(t, 200, "Business updated successfully")
	final := want{"business.updated", biz, map[string]any{"businessId": biz}}

	eventually(t, 15*time.Second, "every receiver has its events", func() bool {
		return all.count() >= len(everything)+1 && mine.count() >= len(ofBusiness)+1 && booked.count() >= 1 && late.count() >= 1
	})
	checkReceived(t, "'*'", all, allSecret, append(everything, final))
	checkReceived(t, "--business", mine, mineSecret, append(ofBusiness, final))
	checkReceived(t, "appointment.booked", booked, bookedSecret, []want{bookedEvent})
	checkReceived(t, "subscribed late", late, lateSecret, []want{final})

	// The replayed booking wrote no second event; the outbox holds no
	// patient data.
	var n int
	if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = 'appointment.booked'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d appointment.booked events in the outbox (%v), want 1", n, err)
	}

	// Every delivery reached its receiver, as the operator sees it.
	ds := h.deliveries()
	perSub := map[string]int{}
	for _, d := range ds {
		if d.State != "delivered" || d.Attempts < 1 || d.EventID == "" {
			t.Errorf("delivery %+v", d)
		}
		perSub[d.SubscriptionID]++
	}
	if perSub[allID] != len(everything)+1 || perSub[mineID] != len(ofBusiness)+1 || perSub[bookedID] != 1 || len(ds) != len(everything)+len(ofBusiness)+4 {
		t.Errorf("deliveries per subscription %v (%d in all)", perSub, len(ds))
	}
	if failed := h.deliveries("--failed"); len(failed) != 0 {
		t.Errorf("failed deliveries %+v", failed)
	}

	// No secret at rest, in any form, and no patient data in any table.
	tables := tableText(t, w.db)
	if !strings.Contains(tables["webhook_subscriptions"], allID) {
		t.Fatalf("webhook_subscriptions does not hold the subscriptions: %q", tables["webhook_subscriptions"])
	}
	for _, sec := range []string{allSecret, mineSecret, bookedSecret, lateSecret} {
		b64 := strings.TrimPrefix(sec, "whsec_")
		raw, _ := base64.StdEncoding.DecodeString(b64)
		for tbl, text := range tables {
			for _, form := range []string{sec, b64, hex.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw)} {
				if strings.Contains(text, form) {
					t.Errorf("table %s holds a webhook secret", tbl)
				}
			}
		}
	}
	for tbl, text := range tables {
		for _, m := range bookingMarkers {
			if strings.Contains(text, m) {
				t.Errorf("table %s holds %q", tbl, m)
			}
		}
	}
	for _, m := range allMarkers {
		if strings.Contains(tables["events"], m) {
			t.Errorf("the outbox holds %q", m)
		}
	}
}

func TestEvents_AdminCLI(t *testing.T) {
	w := newWorld(t)
	h := newHooks(w)
	biz := w.createBusiness("owner")
	run := func(env []string, args ...string) (string, string, int) {
		t.Helper()
		return carebridgeEnv(t, w.dbURL, env, append([]string{"admin"}, args...)...)
	}

	id, secret := h.add("http://127.0.0.1:9/hooks?x=1", "appointment.booked, blob.uploaded", "--business", biz)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(raw) < 24 {
		t.Fatalf("secret %q: %d bytes, %v", secret, len(raw), err)
	}
	other, otherSecret := h.add("https://hooks.example.com/carebridge", "*")
	if other == id || otherSecret == secret {
		t.Fatal("two subscriptions share an id or a secret")
	}

	list := func() (string, []map[string]any) {
		t.Helper()
		out, errOut, code := run(nil, "list-webhooks")
		if code != 0 {
			t.Fatalf("list-webhooks: exit %d: %s", code, errOut)
		}
		var subs []map[string]any
		if err := json.Unmarshal([]byte(out), &subs); err != nil {
			t.Fatalf("list-webhooks printed %q", out)
		}
		return out, subs
	}
	out, subs := list()
	if len(subs) != 2 || subs[0]["id"] != id || subs[0]["url"] != "http://127.0.0.1:9/hooks?x=1" || subs[0]["businessId"] != biz ||
		fmt.Sprint(subs[0]["events"]) != "[appointment.booked blob.uploaded]" || subs[1]["id"] != other || subs[1]["businessId"] != nil ||
		fmt.Sprint(subs[1]["events"]) != "[*]" {
		t.Fatalf("list-webhooks: %s", out)
	}
	for _, s := range []string{secret, otherSecret} {
		if strings.Contains(out, "whsec_") || strings.Contains(out, strings.TrimPrefix(s, "whsec_")) || strings.Contains(strings.ToLower(out), "secret") {
			t.Fatalf("list-webhooks shows a secret: %s", out)
		}
	}

	type result struct {
		what, out, errOut string
		code              int
		names             []string
	}
	results := make(chan result, 16)
	var wg sync.WaitGroup
	for what, c := range map[string]struct {
		env   []string
		args  []string
		names []string // what the message must name
	}{
		"unknown event type":   {h.env(), []string{"add-webhook", "--url", "http://127.0.0.1:9/h", "--events", "blob.uploaded,appointment.exploded"}, []string{"appointment.exploded"}},
		"no event types":       {h.env(), []string{"add-webhook", "--url", "http://127.0.0.1:9/h", "--events", ""}, []string{"--events"}},
		"'*' beside a type":    {h.env(), []string{"add-webhook", "--url", "http://127.0.0.1:9/h", "--events", "*,blob.uploaded"}, []string{"*"}},
		"ftp URL":              {h.env(), []string{"add-webhook", "--url", "ftp://x", "--events", "*"}, []string{"--url", "http"}},
		"relative URL":         {h.env(), []string{"add-webhook", "--url", "/hooks", "--events", "*"}, []string{"--url"}},
		"URL without a scheme": {h.env(), []string{"add-webhook", "--url", "hooks.example.com/x", "--events", "*"}, []string{"--url"}},
		"URL with a password":  {h.env(), []string{"add-webhook", "--url", "https://u:p@hooks.example.com/x", "--events", "*"}, []string{"--url"}},
		"unknown business":     {h.env(), []string{"add-webhook", "--url", "http://127.0.0.1:9/h", "--events", "*", "--business", "6f0e2a52-5d1c-4d59-9a41-5b0c2f0b7e11"}, []string{"--business", "6f0e2a52-5d1c-4d59-9a41-5b0c2f0b7e11"}},
		"business not a uuid":  {h.env(), []string{"add-webhook", "--url", "http://127.0.0.1:9/h", "--events", "*", "--business", "acme"}, []string{"--business"}},
		"bad SERVICE_KEYS":     {[]string{"SERVICE_KEYS=k1:short"}, []string{"add-webhook", "--url", "http://127.0.0.1:9/h", "--events", "*"}, []string{"SERVICE_KEYS", "key 1"}},
		"duplicate key id":     {[]string{"SERVICE_KEYS=k1:" + hex.EncodeToString(key(3)) + ",k1:" + hex.EncodeToString(key(4))}, []string{"add-webhook", "--url", "http://127.0.0.1:9/h", "--events", "*"}, []string{"SERVICE_KEYS", "duplicate"}},
		"remove unknown id":    {nil, []string{"remove-webhook", "--id", "6f0e2a52-5d1c-4d59-9a41-5b0c2f0b7e11"}, []string{"not found"}},
		"remove a non-uuid":    {nil, []string{"remove-webhook", "--id", "nope"}, []string{"not found"}},
	} {
		wg.Add(1)
		go func() { // the commands run at once: each takes a while under -race
			defer wg.Done()
			r := result{what: what, names: c.names}
			r.out, r.errOut, r.code = run(c.env, c.args...)
			results <- r
		}()
	}
	wg.Wait()
	close(results)
	for r := range results {
		what, out, errOut, code := r.what, r.out, r.errOut, r.code
		if code == 0 || out != "" {
			t.Errorf("%s: exit %d, printed %q", what, code, out)
			continue
		}
		for _, n := range r.names {
			if !strings.Contains(errOut, n) {
				t.Errorf("%s: message %q does not name %q", what, errOut, n)
			}
		}
		if strings.Contains(errOut, "whsec_") {
			t.Errorf("%s: message shows a secret: %q", what, errOut)
		}
	}
	if _, subs := list(); len(subs) != 2 {
		t.Fatalf("refused commands changed the subscriptions: %v", subs)
	}

	// Without SERVICE_KEYS the key kept in PostgreSQL seals.
	out, errOut, code := run(nil, "add-webhook", "--url", "http://127.0.0.1:9/h", "--events", "*")
	if code != 0 || !strings.Contains(out, "whsec_") {
		t.Fatalf("without SERVICE_KEYS: exit %d %q %q", code, out, errOut)
	}

	out, errOut, code = run(nil, "remove-webhook", "--id", id)
	if code != 0 || strings.TrimSpace(out) != `{"removed":"`+id+`"}` {
		t.Fatalf("remove-webhook: exit %d %q %q", code, out, errOut)
	}
	if _, subs := list(); len(subs) != 2 || slices.ContainsFunc(subs, func(s map[string]any) bool { return s["id"] == id }) {
		t.Fatalf("after remove: %v", subs)
	}
	if _, errOut, code := run(nil, "remove-webhook", "--id", id); code == 0 || !strings.Contains(errOut, "not found") {
		t.Fatalf("remove twice: exit %d %q", code, errOut)
	}
}

func TestEvents_FailingReceiversAreRetriedAndNeverBlockOthers(t *testing.T) {
	w := newWorld(t)
	h := newHooks(w)
	const changes = 20
	status := func(code int) func(int, http.ResponseWriter, *http.Request) bool {
		return func(_ int, rw http.ResponseWriter, _ *http.Request) bool { rw.WriteHeader(code); return true }
	}
	target := newReceiver(t, nil)
	redirect := newReceiver(t, func(_ int, rw http.ResponseWriter, r *http.Request) bool {
		http.Redirect(rw, r, target.url(), http.StatusFound)
		return true
	})
	bad := newReceiver(t, status(http.StatusBadRequest))
	flaky := newReceiver(t, func(n int, rw http.ResponseWriter, _ *http.Request) bool {
		if n <= 2 {
			rw.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	var hang *receiver
	hang = newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) bool {
		select { // never answers: until the sender gives up, or the test ends
		case <-r.Context().Done():
		case <-hang.stop:
		}
		return true
	})
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	huge := newReceiver(t, func(_ int, rw http.ResponseWriter, _ *http.Request) bool {
		rw.Header().Set("Content-Type", "application/octet-stream")
		rw.WriteHeader(http.StatusInternalServerError)
		rw.(http.Flusher).Flush() // the status goes at once, whatever the machine's load
		for range 20 {            // 20 MiB; the sender stops reading long before
			if _, err := rw.Write(chunk); err != nil {
				break
			}
		}
		return true
	})
	healthy := newReceiver(t, nil)

	s := w.start(func(c *app.Config) {
		h.configure(c)
		// A time-out long enough for a loaded machine (make test runs the
		// packages at once) yet short enough for several attempts in RetryFor.
		c.Events = event.Config{Timeout: time.Second, RetryBase: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond,
			RetryFor: 4 * time.Second, Poll: 50 * time.Millisecond}
	})
	biz := w.createBusiness("owner")
	owner := w.token("owner")
	subs := map[string]*receiver{}
	secrets := map[*receiver]string{}
	rcs := []*receiver{redirect, bad, flaky, hang, huge, healthy}
	var specs [][]string
	for _, rc := range rcs {
		specs = append(specs, []string{rc.url(), "*"})
	}
	ids, secretList := h.addAll(specs...)
	for i, rc := range rcs {
		subs[ids[i]], secrets[rc] = rc, secretList[i]
	}
	healthz := func() {
		t.Helper()
		resp, err := http.Get(s.base + "/healthz")
		if err != nil {
			t.Fatalf("healthz: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("healthz: %d", resp.StatusCode)
		}
	}

	for i := range changes {
		s.bdo("PATCH", "/business/"+biz, owner, map[string]string{"name": fmt.Sprint("Clinic ", i)}).data(t, 200, "Business updated successfully")
	}
	last := time.Now()
	eventually(t, 2*time.Second, fmt.Sprintf("the healthy receiver has all %d events promptly (has %d)", changes, healthy.count()), func() bool {
		return healthy.count() == changes
	})
	t.Logf("the healthy receiver had every event %s after the last change", time.Since(last).Round(time.Millisecond))
	healthz()

	failing := []*receiver{redirect, bad, hang, huge}
	eventually(t, 15*time.Second, "the failing receivers' deliveries end failed, the flaky one's delivered", func() bool {
		healthz()
		rows, err := w.db.Query(context.Background(), `SELECT subscription_id::text, state FROM webhook_deliveries`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		done := 0
		for rows.Next() {
			var sub, state string
			if err := rows.Scan(&sub, &state); err != nil {
				t.Fatal(err)
			}
			if rc := subs[sub]; rc == flaky && state == "delivered" || slices.Contains(failing, rc) && state == "failed" {
				done++
			}
		}
		return done == changes*(len(failing)+1)
	})
	t.Logf("every delivery settled %s after the last change", time.Since(last).Round(time.Millisecond))
	healthz()

	failed := h.deliveries("--failed")
	if len(failed) != changes*len(failing) {
		t.Errorf("%d failed deliveries, want %d", len(failed), changes*len(failing))
	}
	for _, d := range failed {
		rc := subs[d.SubscriptionID]
		if !slices.Contains(failing, rc) || d.Attempts < 2 || d.LastError == "" {
			t.Errorf("failed delivery %+v", d)
		}
		if strings.Contains(d.LastError, "127.0.0.1") || strings.Contains(d.LastError, "xxxx") {
			t.Errorf("the error shows the URL or the answer: %+v", d)
		}
		switch {
		case rc == redirect && d.LastStatus != 302, rc == bad && d.LastStatus != 400, rc == huge && d.LastStatus != 500, rc == hang && d.LastStatus != 0:
			t.Errorf("last status of %+v", d)
		}
	}
	for _, d := range h.deliveries() {
		if rc := subs[d.SubscriptionID]; rc == flaky && d.Attempts != 3 || rc == healthy && (d.State != "delivered" || d.Attempts != 1) {
			t.Errorf("delivery %+v", d)
		}
	}
	if flaky.count() != changes || healthy.count() != changes {
		t.Errorf("flaky has %d events, healthy %d; want %d", flaky.count(), healthy.count(), changes)
	}
	for _, rc := range []*receiver{flaky, healthy} {
		for _, d := range rc.events() {
			if err := verifyWebhook(secrets[rc], d.header, d.body, d.at); err != nil {
				t.Errorf("signature: %v", err)
			}
		}
	}
	if n := target.requests(); n != 0 {
		t.Errorf("the redirect was followed: its target got %d requests", n)
	}
	retries := 0
	for _, rc := range failing {
		if rc.requests() <= changes {
			t.Errorf("a failing receiver got %d requests for %d events: no retries", rc.requests(), changes)
		}
		retries += rc.requests() - changes // each failing one's attempts but its last
	}
	// The attempts as /metrics counts them: delivered (healthy and flaky),
	// failed for good, and the failed attempts retried (flaky's two each).
	page := string(s.do("GET", "/metrics", "", nil).body)
	for series, want := range map[string]float64{
		`carebridge_webhook_attempts_total{outcome="delivered"}`: 2 * changes,
		`carebridge_webhook_attempts_total{outcome="failed"}`:    float64(len(failing) * changes),
		`carebridge_webhook_attempts_total{outcome="retry"}`:     float64(2*changes + retries),
		`carebridge_webhook_delivery_seconds_count`:              2 * changes,
	} {
		if v, ok := metricValue(page, series); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
}

// natsURL is the NATS server of the tests: NATS_URL, else the local one.
func natsURL() string {
	if u := os.Getenv("NATS_URL"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// streamMessage is a message of the events stream.
type streamMessage struct {
	subject, msgID string
	data           []byte
}

// readStream reads the messages of stream CAREBRIDGE_EVENTS stored since
// since, through an ordered consumer on carebridge.events.>. It never
// changes the stream (other packages' tests use it at the same time).
func readStream(t *testing.T, js jetstream.JetStream, since time.Time) []streamMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "CAREBRIDGE_EVENTS")
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"carebridge.events.>"},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
	})
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	var out []streamMessage
	for {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		n, pending := 0, uint64(0)
		for m := range batch.Messages() {
			n++
			out = append(out, streamMessage{subject: m.Subject(), msgID: m.Headers().Get("Nats-Msg-Id"), data: m.Data()})
			if md, err := m.Metadata(); err == nil {
				pending = md.NumPending
			}
		}
		if n == 0 || pending == 0 {
			return out
		}
	}
}

func TestEvents_NATS(t *testing.T) {
	url := natsURL()
	nc, err := natsgo.Connect(url, natsgo.Timeout(2*time.Second))
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("NATS with JetStream at %s unreachable (%v)", url, err), "run make test, which starts it")
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = js.AccountInfo(ctx)
		cancel()
	}
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("NATS with JetStream at %s: JetStream unavailable (%v)", url, err), "run make test, which starts it")
	}

	w := newWorld(t)
	h := newHooks(w)
	since := time.Now().Add(-time.Second)
	s := w.start(func(c *app.Config) {
		h.configure(c)
		c.EventsNATSURL = url
		c.Events = event.Config{Poll: 100 * time.Millisecond}
	})
	rc := newReceiver(t, nil)
	_, secret := h.add(rc.url(), "*")
	biz := w.createBusiness("owner")
	owner := w.token("owner")
	s.bdo("PATCH", "/business/"+biz, owner, map[string]string{"name": "Streamed"}).data(t, 200, "Business updated successfully")
	loc := int64(s.bdo("POST", "/business/location/"+biz+"/", owner, locationForm(t, false, map[string]string{"name": "Main"}, nil, nil, "", "")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"].(float64))
	s.bdo("POST", "/business/operating-hours/add", owner, map[string]any{"businessLocationId": loc,
		"operatingHours": []map[string]string{{"day": "Friday", "start_time": "09:00", "end_time": "17:00"}}}).
		data(t, 201, "Operating hours added successfully")
	const n = 3

	type stored struct {
		typ       string
		published *time.Time
	}
	outbox := func() map[string]stored {
		t.Helper()
		rows, err := w.db.Query(context.Background(), `SELECT id, type, published_at FROM events`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]stored{}
		for rows.Next() {
			var id string
			var st stored
			if err := rows.Scan(&id, &st.typ, &st.published); err != nil {
				t.Fatal(err)
			}
			out[id] = st
		}
		return out
	}
	// published reports whether the outbox's n events were all published
	// after after.
	published := func(after time.Time) func() bool {
		return func() bool {
			evs := outbox()
			for _, e := range evs {
				if e.published == nil || !e.published.After(after) {
					return false
				}
			}
			return len(evs) == n
		}
	}
	eventually(t, 10*time.Second, "every event is published", published(time.Time{}))
	eventually(t, 10*time.Second, "every event is delivered to the webhook", func() bool { return rc.count() == n })
	webhookBody := map[string][]byte{}
	for _, d := range rc.events() {
		if err := verifyWebhook(secret, d.header, d.body, d.at); err != nil {
			t.Errorf("signature: %v", err)
		}
		webhookBody[d.ev.ID] = d.body
	}

	check := func(when string) {
		t.Helper()
		evs := outbox()
		count := map[string]int{}
		for _, m := range readStream(t, js, since) {
			e, ours := evs[m.msgID]
			if !ours {
				continue // another test's, or another run's
			}
			count[m.msgID]++
			if m.subject != "carebridge.events."+e.typ || !bytes.Equal(m.data, webhookBody[m.msgID]) {
				t.Errorf("%s: message %s on %s: %s; the webhook got %s", when, m.msgID, m.subject, m.data, webhookBody[m.msgID])
			}
		}
		for id, e := range evs {
			if count[id] != 1 {
				t.Errorf("%s: event %s (%s) is %d times in the stream, want once", when, id, e.typ, count[id])
			}
		}
	}
	check("published")

	// Published again (as after a crash before it was marked): the stream
	// keeps one of each.
	var mark time.Time
	if err := w.db.QueryRow(context.Background(), `UPDATE events SET published_at = NULL, publish_after = '-infinity' RETURNING now()`).Scan(&mark); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "every event is published again", published(mark))
	check("published again")
}
