package test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/logtest"
	"github.com/carebridge/carebridge/test/pgtest"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// Distinctive patient data: none of it may reach the audit trail, the log
// or (but for what the EHR itself keeps) any table.
var (
	markFamily   = "Quixwellmark"
	markGiven    = "Zebulonmark"
	markBirth    = "1913-04-05"
	markMRN      = "MRN-MARK-77"
	markEmail    = "zq.marker@example.org"
	markPhone    = "+1 555 013 7799"
	markFilename = "zebulon-chartmarker.txt"
	// What a booking sends; the EHR keeps it, Carebridge's tables must not.
	bookingMarkers = []string{markFamily, markGiven, markBirth, markEmail, "555 013 7799", "5550137799"}
	allMarkers     = append([]string{markMRN, "chartmarker"}, bookingMarkers...)
)

func markedBooking(hour int) string {
	return fmt.Sprintf(`{"agentId":"dr-ana","start":%q,"durationMinutes":30,"reason":"check-up","locationId":"main",
		"patient":{"firstName":%q,"lastName":%q,"dateOfBirth":%q,"email":%q,"phone":%q}}`,
		timeAt(hour, 0), markGiven, markFamily, markBirth, markEmail, markPhone)
}

// tableText is every row of every table of the service's database, as text.
func tableText(t *testing.T, db *pgxpool.Pool) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	if rows.Err() != nil || len(tables) < 8 {
		t.Fatalf("tables %v: %v", tables, rows.Err())
	}
	out := map[string]string{}
	for _, tbl := range tables {
		var text *string
		if err := db.QueryRow(ctx, fmt.Sprintf(`SELECT string_agg(t::text, E'\n') FROM %q t`, tbl)).Scan(&text); err != nil {
			t.Fatalf("read %s: %v", tbl, err)
		}
		if text != nil {
			out[tbl] = *text
		}
	}
	return out
}

type auditRow struct {
	actor, action, resourceType, resourceID, outcome, requestID string
	status                                                      int
	detail                                                      string
}

func auditRows(t *testing.T, db *pgxpool.Pool) []auditRow {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT actor, action, resource_type, resource_id, outcome, request_id, status, detail::text FROM audit_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		if err := rows.Scan(&r.actor, &r.action, &r.resourceType, &r.resourceID, &r.outcome, &r.requestID, &r.status, &r.detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestAudit_EveryAccessIsRecordedWithoutPatientData(t *testing.T) {
	w := newWorld(t)
	logs := &logtest.Buffer{}
	ehrA := newFakeEHR(t, "clinica", fhirPatient("a-1", markFamily, markGiven, markBirth, markMRN))
	searchCfg, _ := ehrFile(t, 2000, ehrA)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	searcher := w.startLogging(logs, func(c *app.Config) { c.EHR = searchCfg })
	booker := w.startLogging(logs, func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	staff := w.token("reception")

	var want []auditRow // in order
	expect := func(r response, actor, action, resourceType, resourceID, outcome string) {
		t.Helper()
		want = append(want, auditRow{actor: actor, action: action, resourceType: resourceType, resourceID: resourceID,
			outcome: outcome, requestID: r.header.Get("X-Request-Id"), status: r.status})
	}
	// An appointment change records that it started before the EHR is
	// called; the request's final event follows.
	expectChange := func(r response, actor, action, resourceID, startedID, outcome string) {
		t.Helper()
		want = append(want, auditRow{actor: actor, action: action, resourceType: "appointment", resourceID: startedID,
			outcome: "started", requestID: r.header.Get("X-Request-Id")})
		expect(r, actor, action, "appointment", resourceID, outcome)
	}

	for _, q := range []string{
		fmt.Sprintf(`{"query":"given:%s family:%s birthdate:%s"}`, markGiven, markFamily, markBirth),
		fmt.Sprintf(`{"query":"identifier:%s phone:\"%s\""}`, markMRN, markPhone),
	} {
		r, ans := searcher.search(staff, q)
		if r.status != 200 || ans.Data.TotalCount != 1 {
			t.Fatalf("search: %d %s", r.status, r.body)
		}
		expect(r, "reception", "patient.search", "patient", "", "success")
	}
	// Refused for want of a token: counted, and recorded once for its
	// client address, action and minute (at the latest when the service
	// stops), as the first such request.
	r, _ := searcher.search("", `{"query":"`+markFamily+`"}`)
	expect(r, "", "patient.search", "patient", "", "denied")
	unauthenticated := r.header.Get("X-Request-Id")
	r, _ = searcher.search(w.scopedToken("pat", "patient/Appointment.cus"), `{"query":"`+markFamily+`"}`)
	expect(r, "pat", "patient.search", "patient", "", "denied")

	r, appt := booker.ehrCall("POST", "/appointment/customer", staff, markedBooking(9), "Idempotency-Key", "mark-1")
	if r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	id := appt["id"].(string)
	expectChange(r, "reception", "appointment.create", id, "", "success")
	r, _ = booker.ehrCall("POST", "/appointment/customer", staff, markedBooking(9))
	expectChange(r, "reception", "appointment.create", "", "", "error") // 409: the time is taken
	r, _ = booker.ehrCall("GET", "/appointment?patientEmail="+url.QueryEscape(markEmail), staff, "")
	expect(r, "reception", "appointment.list", "appointment", "", "success")
	r, _ = booker.ehrCall("POST", "/appointment/"+id+"/reschedule", staff, fmt.Sprintf(`{"start":%q,"end":%q}`, timeAt(10, 0), timeAt(10, 30)))
	expectChange(r, "reception", "appointment.reschedule", id, id, "success")
	r, _ = booker.ehrCall("PUT", "/appointment/customer/"+id+"/cancel", w.scopedToken("other", "patient/Appointment.cus"), "")
	expectChange(r, "other", "appointment.cancel", id, id, "denied")
	r, _ = booker.ehrCall("PUT", "/appointment/customer/"+id+"/cancel", staff, `{"reason":"`+markFamily+` is better"}`)
	expectChange(r, "reception", "appointment.cancel", id, id, "success")

	content := []byte("chart notes of " + markGiven + " " + markFamily)
	r = searcher.upload(staff, fileFields(markFilename, "text/plain", content)...)
	if r.status != 201 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	blobID := fmt.Sprint(int64(r.json(t)["id"].(float64)))
	expect(r, "reception", "blob.upload", "blob", blobID, "success")
	r = searcher.do("GET", "/cloud-blob/metadata/"+blobID, staff, nil)
	expect(r, "reception", "blob.metadata", "blob", blobID, "success")
	r = searcher.do("GET", "/cloud-blob/download/"+blobID, w.token("intruder"), nil)
	expect(r, "intruder", "blob.download", "blob", blobID, "denied")
	r = searcher.do("GET", "/cloud-blob/download/"+blobID, staff, nil)
	if r.status != 200 || string(r.body) != string(content) {
		t.Fatalf("download: %d", r.status)
	}
	expect(r, "reception", "blob.download", "blob", blobID, "success")
	r = searcher.do("DELETE", "/cloud-blob/"+blobID, staff, nil)
	expect(r, "reception", "blob.delete", "blob", blobID, "success")
	// Agents are not patient data.
	if r := booker.do("GET", "/agents", staff, nil); r.status != 200 {
		t.Fatalf("agents: %d", r.status)
	}

	searcher.stop()
	booker.stop()
	got := auditRows(t, w.db)
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d:\n%+v", len(got), len(want), got)
	}
	type event struct {
		requestID string
		started   bool
	}
	byRequest := map[event]auditRow{}
	position := map[event]int{}
	for i, g := range got {
		k := event{g.requestID, g.outcome == "started"}
		byRequest[k], position[k] = g, i
	}
	for _, wr := range want {
		k := event{wr.requestID, wr.outcome == "started"}
		g, ok := byRequest[k]
		detail := g.detail
		g.detail = ""
		if !ok || g != wr {
			t.Errorf("event of request %s: %+v, want %+v", wr.requestID, g, wr)
		}
		if k.started && position[k] > position[event{wr.requestID, false}] {
			t.Errorf("request %s: the started event follows the final one", wr.requestID)
		}
		if wr.requestID == unauthenticated && detail != `{"count": 1}` {
			t.Errorf("401 detail %s", detail)
		}
		if wr.action == "patient.search" && wr.status == 200 && detail != `{"results": 1, "sources": ["clinica"], "cacheHit": false}` {
			t.Errorf("search detail %s", detail)
		}
		if wr.action == "appointment.list" && detail != `{"results": 1}` {
			t.Errorf("list detail %s", detail)
		}
	}

	// The chain holds across the writer and the blob transactions, and the
	// CLI lists the started events.
	if out, code := carebridge(t, w.dbURL, "audit", "verify"); code != 0 || strings.TrimSpace(out) != fmt.Sprintf(`{"events":%d,"ok":true}`, len(want)) {
		t.Fatalf("verify: exit %d, %s", code, out)
	}
	if out, code := carebridge(t, w.dbURL, "audit", "list", "--since", "1h"); code != 0 || strings.Count(out, `"outcome":"started"`) != 5 {
		t.Fatalf("list: exit %d, %s", code, out)
	}

	trail := tableText(t, w.db)["audit_events"]
	log := logs.String()
	for _, m := range allMarkers {
		if strings.Contains(trail, m) {
			t.Errorf("the audit trail holds %q", m)
		}
		if strings.Contains(log, m) {
			t.Errorf("the log holds %q", m)
		}
	}
	// No patient data at rest: but for blob metadata (the filename is the
	// file's), no table holds what was booked or searched.
	for tbl, text := range tableText(t, w.db) {
		for _, m := range bookingMarkers {
			if strings.Contains(text, m) {
				t.Errorf("table %s holds %q", tbl, m)
			}
		}
	}
}

// newRoleWorld is newWorld whose apps connect as an unprivileged role that
// owns the database, as the service does in production; w.db is the
// superuser's pool.
func newRoleWorld(t *testing.T, opts ...worldOption) (*world, string) {
	t.Helper()
	w := newWorld(t, opts...)
	adminURL, serviceURL, role := pgtest.NewWithRole(t)
	w.dbURL = serviceURL
	db, err := pgxpool.New(context.Background(), adminURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	w.db = db
	return w, role
}

func TestAudit_NothingIsAnsweredOrChangedWhenTheTrailCannotBeWritten(t *testing.T) {
	w, role := newRoleWorld(t, withS3)
	ehrA := newFakeEHR(t, "clinica", fhirPatient("a-1", markFamily, markGiven, markBirth, markMRN))
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	link, linkedURL := newDBLink(t, w.dbURL)
	s := w.start(func(c *app.Config) {
		c.DatabaseURL = linkedURL
		c.EHR = searchAndBookFile(t, ehrA, bot.URL())
	})
	staff := w.token("reception")
	searchQuery := `{"query":"family:` + markFamily + `"}`

	up := s.upload(staff, fileFields("a.txt", "text/plain", []byte("hello"))...)
	if up.status != 201 {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	blobID := fmt.Sprint(int64(up.json(t)["id"].(float64)))
	rowsBefore, objectsBefore := w.rows(), w.objects()

	refused := func(what string) {
		t.Helper()
		if r, _ := s.search(staff, searchQuery); r.status != 503 || r.errorCode(t) != "audit_unavailable" || strings.Contains(string(r.body), markFamily) {
			t.Fatalf("%s: search %d %s", what, r.status, r.body)
		}
		if r := s.do("GET", "/cloud-blob/download/"+blobID, staff, nil); r.status != 503 || r.errorCode(t) != "audit_unavailable" {
			t.Fatalf("%s: download %d %s", what, r.status, r.body)
		}
		if r := s.upload(staff, fileFields("b.txt", "text/plain", []byte("world"))...); r.status != 503 || r.errorCode(t) != "audit_unavailable" {
			t.Fatalf("%s: upload %d %s", what, r.status, r.body)
		}
		if r := s.do("POST", "/appointment/customer", staff, strings.NewReader(markedBooking(9)), "Content-Type", "application/json"); r.status != 503 || r.errorCode(t) != "audit_unavailable" {
			t.Fatalf("%s: booking %d %s", what, r.status, r.body)
		}
		if r := s.do("DELETE", "/cloud-blob/"+blobID, staff, nil); r.status != 503 {
			t.Fatalf("%s: delete %d %s", what, r.status, r.body)
		}
	}

	// The service's role may no longer insert into the trail.
	if _, err := w.db.Exec(context.Background(), "REVOKE INSERT ON audit_events FROM "+role); err != nil {
		t.Fatal(err)
	}
	refused("insert revoked")
	if w.rows() != rowsBefore || w.objects() != objectsBefore {
		t.Fatalf("a change was made unaudited: %d rows, %d objects (before %d, %d)", w.rows(), w.objects(), rowsBefore, objectsBefore)
	}
	if r := s.do("GET", "/appointment", staff, nil); r.status != 503 {
		t.Fatalf("list while revoked: %d", r.status)
	}
	if _, err := w.db.Exec(context.Background(), "GRANT INSERT ON audit_events TO "+role); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.ehrCall("GET", "/appointment", staff, ""); r.status != 200 || !strings.Contains(string(r.body), `"totalCount":0`) {
		t.Fatalf("the booking was made unaudited, or the service did not recover: %d %s", r.status, r.body)
	}

	// The database stops answering.
	link.stop()
	refused("database stopped")
	link.start()
	if r, _ := s.search(staff, searchQuery); r.status != 200 {
		t.Fatalf("after the database is back: %d %s", r.status, r.body)
	}
	if w.rows() != rowsBefore || w.objects() != objectsBefore {
		t.Fatalf("a change was made unaudited: %d rows, %d objects", w.rows(), w.objects())
	}
}

// searchAndBookFile is an EHR systems file with the fake FHIR EHR e for
// search and the bot at botURL for appointments.
func searchAndBookFile(t *testing.T, e *fakeEHR, botURL string) *ehrconfig.Config {
	t.Helper()
	yaml := fmt.Sprintf(`ehr_systems:
  - name: %s
    adapter: fhir
    base_url: %s/fhir
    search_types: [patient_record]
    authentication: { type: api_key, api_key: "env:KEY" }
    rate_limit: { requests_per_minute: 60000 }
    timeout: 5000
  - name: peer
    adapter: wsbot
    base_url: %s
    timeout: 5000
integration:
  ehr: peer
`, e.name, e.srv.URL, botURL)
	cfg, err := ehrkinds.All().Parse([]byte(yaml), nil, func(string) string { return "key-" + e.name })
	if err != nil {
		t.Fatalf("EHR file: %v\n%s", err, yaml)
	}
	return cfg
}

// The trail holds as one chain with two instances writing at once.
func TestAudit_TwoInstancesKeepOneChain(t *testing.T) {
	w, role := newRoleWorld(t)
	a := w.start(nil)
	b := w.start(nil)
	owner := w.token("alice")
	up := a.upload(owner, fileFields("a.txt", "text/plain", []byte("hello"))...)
	id := fmt.Sprint(int64(up.json(t)["id"].(float64)))
	var wg sync.WaitGroup
	for _, s := range []*server{a, b} {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 40 {
					tok := owner
					if i%4 == 0 {
						tok = w.token("mallory") // denied, audited all the same
					}
					s.do("GET", "/cloud-blob/metadata/"+id, tok, nil)
				}
			}()
		}
	}
	wg.Wait()
	out, code := carebridge(t, w.dbURL, "audit", "verify")
	if code != 0 || strings.TrimSpace(out) != `{"events":321,"ok":true}` {
		t.Fatalf("verify: exit %d, %s", code, out)
	}
	// As the service's own role, the trail cannot be changed.
	svc, err := pgxpool.New(context.Background(), w.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for _, sql := range []string{`UPDATE audit_events SET actor = 'x' WHERE id = 5`, `DELETE FROM audit_events WHERE id = 5`, `TRUNCATE audit_events`} {
		if _, err := svc.Exec(context.Background(), sql); err == nil {
			t.Fatalf("%s: allowed for %s", sql, role)
		}
	}
	// A superuser who disables the trigger and alters one event is caught.
	if _, err := w.db.Exec(context.Background(), `ALTER TABLE audit_events DISABLE TRIGGER USER;
		UPDATE audit_events SET actor = actor || '-x' WHERE id = 77; ALTER TABLE audit_events ENABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	out, code = carebridge(t, w.dbURL, "audit", "verify")
	if code != 1 || strings.TrimSpace(out) != `{"events":321,"ok":false,"firstBad":77}` {
		t.Fatalf("verify after tampering: exit %d, %s", code, out)
	}
}

// refuseAuditOf makes the database refuse every audit event of action (a
// trigger), as a failure of that one event would; the returned func lifts
// it.
func refuseAuditOf(t *testing.T, db *pgxpool.Pool, action string) func() {
	t.Helper()
	ctx := context.Background()
	_, err := db.Exec(ctx, fmt.Sprintf(`
		CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.action = '%s' THEN RAISE EXCEPTION 'audit event refused for the test'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()`, action))
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := db.Exec(ctx, `DROP TRIGGER refuse_audit ON audit_events; DROP FUNCTION refuse_audit()`); err != nil {
			t.Fatal(err)
		}
	}
}

// A change whose own audit event cannot be written is not made: not the
// blob row nor its object, not the EHR's appointment.
func TestAudit_AChangeWhoseEventIsRefusedIsNotMade(t *testing.T) {
	w := newWorld(t, withS3)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	staff := w.token("reception")

	content := []byte("kept")
	up := s.upload(staff, fileFields("a.txt", "text/plain", content)...)
	if up.status != 201 {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	blobID := fmt.Sprint(int64(up.json(t)["id"].(float64)))
	r, appt := s.ehrCall("POST", "/appointment/customer", staff, slotAt("dr-ana", 9, 30))
	if r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	apptID := appt["id"].(string)
	appointments := func() string {
		t.Helper()
		r, _ := s.ehrCall("GET", "/appointment", staff, "")
		if r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		return string(r.body)
	}
	rowsBefore, objectsBefore, listBefore := w.rows(), w.objects(), appointments()
	if !strings.Contains(listBefore, `"totalCount":1`) {
		t.Fatalf("list: %s", listBefore)
	}

	for _, tt := range []struct {
		action string
		call   func() response
	}{
		{"blob.upload", func() response { return s.upload(staff, fileFields("b.txt", "text/plain", []byte("refused"))...) }},
		{"blob.delete", func() response { return s.do("DELETE", "/cloud-blob/"+blobID, staff, nil) }},
		{"appointment.create", func() response {
			r, _ := s.ehrCall("POST", "/appointment/customer", staff, slotAt("dr-ana", 11, 30))
			return r
		}},
		{"appointment.cancel", func() response {
			r, _ := s.ehrCall("PUT", "/appointment/customer/"+apptID+"/cancel", staff, `{"reason":"refused"}`)
			return r
		}},
		{"appointment.reschedule", func() response {
			r, _ := s.ehrCall("POST", "/appointment/"+apptID+"/reschedule", staff, fmt.Sprintf(`{"start":%q,"end":%q}`, timeAt(15, 0), timeAt(15, 30)))
			return r
		}},
	} {
		lift := refuseAuditOf(t, w.db, tt.action)
		r := tt.call()
		lift()
		if r.status != 503 || r.errorCode(t) != "audit_unavailable" {
			t.Fatalf("%s refused by the trail: %d %s", tt.action, r.status, r.body)
		}
		if w.rows() != rowsBefore || w.objects() != objectsBefore || appointments() != listBefore {
			t.Fatalf("%s was made unaudited: %d rows, %d objects (before %d, %d); appointments %s", tt.action,
				w.rows(), w.objects(), rowsBefore, objectsBefore, appointments())
		}
	}
	if d := s.do("GET", "/cloud-blob/download/"+blobID, staff, nil); d.status != 200 || string(d.body) != string(content) {
		t.Fatalf("download after the refused delete: %d", d.status)
	}
	if out, code := carebridge(t, w.dbURL, "audit", "verify"); code != 0 || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("verify: exit %d, %s", code, out)
	}
}

// Anonymous traffic neither fills the trail nor holds up the audited
// calls of authenticated callers: a flood of token-less requests is
// answered 401 and recorded as a few events whose counts add up to it.
func TestAudit_AFloodOfUnauthenticatedRequestsIsCountedNotQueued(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	owner := w.token("alice")
	up := s.upload(owner, fileFields("a.txt", "text/plain", []byte("hello"))...)
	if up.status != 201 {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	id := fmt.Sprint(int64(up.json(t)["id"].(float64)))

	const flood, floodWorkers = 3000, 32
	targets := []struct{ method, path, action string }{
		{"GET", "/cloud-blob/metadata/" + id, "blob.metadata"},
		{"GET", "/cloud-blob/download/" + id, "blob.download"},
		{"DELETE", "/cloud-blob/" + id, "blob.delete"},
		{"POST", "/api/v1/search", "patient.search"},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: floodWorkers}}
	defer client.CloseIdleConnections()
	var (
		next, unexpected atomic.Int64
		wg               sync.WaitGroup
	)
	start := time.Now()
	for range floodWorkers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < flood; i = next.Add(1) - 1 {
				tg := targets[i%int64(len(targets))]
				req, _ := http.NewRequest(tg.method, s.base+tg.path, strings.NewReader(`{"query":"x"}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					unexpected.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					unexpected.Add(1)
				}
			}
		})
	}
	// Meanwhile, authenticated audited calls: each answered as usual, each
	// with its own event.
	const callers, calls = 4, 25
	var answered sync.Map // request id → status
	for range callers {
		wg.Go(func() {
			for range calls {
				r := s.do("GET", "/cloud-blob/metadata/"+id, owner, nil)
				answered.Store(r.header.Get("X-Request-Id"), r.status)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := unexpected.Load(); n != 0 {
		t.Fatalf("%d token-less requests were not answered 401", n)
	}
	n := 0
	answered.Range(func(k, v any) bool {
		n++
		if v.(int) != 200 {
			t.Errorf("authenticated call %s answered %d", k, v)
		}
		return true
	})
	if n != callers*calls {
		t.Fatalf("%d authenticated calls answered, want %d", n, callers*calls)
	}

	s.stop() // what is counted is recorded by the time the service has stopped
	ctx := context.Background()
	rows, err := w.db.Query(ctx, `SELECT action, count(*), sum((detail->>'count')::int) FROM audit_events
		WHERE status = 401 GROUP BY action`)
	if err != nil {
		t.Fatal(err)
	}
	minutes := int(elapsed/time.Minute) + 2 // the flood may straddle minute boundaries
	total := 0
	for rows.Next() {
		var action string
		var events, count int
		if err := rows.Scan(&action, &events, &count); err != nil {
			t.Fatal(err)
		}
		if events > minutes {
			t.Errorf("%s: %d events for the 401s of at most %d minutes from one address", action, events, minutes)
		}
		if count != flood/len(targets) {
			t.Errorf("%s: the events count %d refusals, want %d", action, count, flood/len(targets))
		}
		total += count
	}
	if rows.Err() != nil || total != flood {
		t.Fatalf("the 401 events count %d refusals, want %d (%v)", total, flood, rows.Err())
	}
	var audited int
	if err := w.db.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'blob.metadata' AND status = 200 AND actor = 'alice'`).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != callers*calls {
		t.Fatalf("%d events of the authenticated calls, want %d", audited, callers*calls)
	}
	if out, code := carebridge(t, w.dbURL, "audit", "verify"); code != 0 || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("verify: exit %d, %s", code, out)
	}
}
