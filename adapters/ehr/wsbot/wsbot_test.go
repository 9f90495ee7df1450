package wsbot_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// newClient returns a client of srv, closed when the test ends (before
// the bot, which was started first).
func newClient(t *testing.T, url string, adjust func(*wsbot.Config)) *wsbot.Client {
	t.Helper()
	cfg := wsbot.Config{
		Name:        "clinic-bot",
		URL:         url,
		CallTimeout: 5 * time.Second,
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		Logger:      slog.New(slog.DiscardHandler),
	}
	if adjust != nil {
		adjust(&cfg)
	}
	c, err := wsbot.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// future is a day a week ahead, at hour:00 UTC.
func future(hour int) time.Time {
	return time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 7).Add(time.Duration(hour) * time.Hour)
}

// seedAgents adds n agents free all of the future day.
func seedAgents(srv *wsbottest.Server, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = srv.AddAgent(ehr.Agent{FirstName: "Agent", LastName: fmt.Sprint(i), Name: fmt.Sprintf("Agent %d", i), Timezone: "UTC"},
			[]ehr.Period{{Start: future(0), End: future(24)}})
	}
	return ids
}

func codeOf(err error) (core.Kind, string) {
	var ce *core.Error
	if errors.As(err, &ce) {
		return ce.Kind, ce.Code
	}
	return core.KindInternal, ""
}

func wantCode(t *testing.T, what string, err error, kind core.Kind, code string) {
	t.Helper()
	if k, c := codeOf(err); k != kind || c != code {
		t.Fatalf("%s: error = %v (kind %d, code %q); want kind %d, code %q", what, err, k, c, kind, code)
	}
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClient_SchedulerContract(t *testing.T) {
	ehrtest.TestScheduler(t, func(t *testing.T) ehrtest.Backend {
		srv := wsbottest.Start(t)
		c := newClient(t, srv.URL(), nil)
		return ehrtest.Backend{
			Scheduler: c,
			AddAgent: func(t *testing.T, a ehr.Agent, free []ehr.Period) string {
				return srv.AddAgent(a, free)
			},
		}
	})
}

func TestClient_CorrelatesConcurrentCallsAnsweredOutOfOrder(t *testing.T) {
	srv := wsbottest.Start(t)
	ids := seedAgents(srv, 64)
	srv.SetOutOfOrder(16)
	c := newClient(t, srv.URL(), nil)

	for round := range 3 {
		var wg sync.WaitGroup
		errs := make(chan error, len(ids))
		for i, id := range ids {
			wg.Go(func() {
				a, err := c.GetAgent(t.Context(), id)
				if err == nil && (a.ID != id || a.Name != fmt.Sprintf("Agent %d", i)) {
					err = fmt.Errorf("asked for %s, got %s (%s)", id, a.ID, a.Name)
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
	}
	if n := srv.Connections(); n != 1 {
		t.Errorf("the calls used %d connections; want 1", n)
	}
}

func TestClient_CallTimesOutWhileOtherCallsSucceed(t *testing.T) {
	srv := wsbottest.Start(t)
	ids := seedAgents(srv, 1)
	// The bot answers after 30 s: a call that ends in ehr_timeout before
	// then was ended by a time-out of the client's (no clock read needed).
	srv.SetDelay("agents.get", 30*time.Second)
	// 2 s, not less: each of the calls beside the slow one must answer
	// within it even on a loaded machine.
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) { cfg.CallTimeout = 2 * time.Second })

	var wg sync.WaitGroup
	var slowErr error
	wg.Go(func() { _, slowErr = c.GetAgent(t.Context(), ids[0]) })
	for range 20 {
		if _, err := c.ListAgents(t.Context(), ehr.AgentFilter{}); err != nil {
			t.Errorf("ListAgents beside a slow call: %v", err)
		}
	}
	wg.Wait()
	wantCode(t, "slow call", slowErr, core.KindTimeout, "ehr_timeout")
	if _, err := c.ListAgents(t.Context(), ehr.AgentFilter{}); err != nil {
		t.Errorf("ListAgents after the time-out: %v", err)
	}
	if n := srv.Connections(); n != 1 {
		t.Errorf("a time-out cost the link: %d connections; want 1", n)
	}

	// The caller's deadline applies when it is the earlier one: with a call
	// time-out of an hour, only the caller's 50 ms can end the call before
	// the bot answers (and were it ignored, the answer would come, a success).
	long := newClient(t, srv.URL(), func(cfg *wsbot.Config) { cfg.CallTimeout = time.Hour })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := long.GetAgent(ctx, ids[0])
	wantCode(t, "caller's deadline", err, core.KindTimeout, "ehr_timeout")
	if _, err := long.ListAgents(t.Context(), ehr.AgentFilter{}); err != nil {
		t.Errorf("ListAgents after the caller's deadline: %v", err)
	}
}

func TestClient_LinkDropFailsInFlightCallsAndTheNextCallReconnects(t *testing.T) {
	srv := wsbottest.Start(t)
	ids := seedAgents(srv, 1)
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) { cfg.CallTimeout = 20 * time.Second })
	if _, err := c.GetAgent(t.Context(), ids[0]); err != nil {
		t.Fatal(err)
	}
	srv.SetDelay("agents.get", 30*time.Second)

	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.GetAgent(t.Context(), ids[0])
			errs <- err
		}()
	}
	eventually(t, "the calls to reach the bot", func() bool { return srv.Requests() >= n+1 })
	srv.DropAll()
	// ehr_unreachable, not the 20 s call time-out's ehr_timeout: the drop
	// ended them.
	for range n {
		err := <-errs
		wantCode(t, "in-flight call", err, core.KindBadGateway, "ehr_unreachable")
	}

	srv.SetDelay("agents.get", 0)
	if _, err := c.GetAgent(t.Context(), ids[0]); err != nil {
		t.Fatalf("the call after the drop: %v", err)
	}
	if got := srv.Connections(); got != 2 {
		t.Errorf("connections = %d; want 2 (one reconnection)", got)
	}

	// A drop in mid-stream: the request that meets it fails, the next
	// one reconnects.
	srv.DropAfter(0)
	_, err := c.GetAgent(t.Context(), ids[0])
	wantCode(t, "the dropped request", err, core.KindBadGateway, "ehr_unreachable")
	if _, err := c.GetAgent(t.Context(), ids[0]); err != nil || srv.Connections() != 3 {
		t.Errorf("after a mid-stream drop: %v, %d connections; want success over a third", err, srv.Connections())
	}
}

func TestClient_DropsAPeerThatStopsAnsweringPings(t *testing.T) {
	srv := wsbottest.Start(t)
	ids := seedAgents(srv, 1)
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) {
		// A pong wait of 2 s, far beyond any scheduling stall of a loaded
		// machine, so only a peer that stops answering drops the link.
		cfg.PingInterval = 100 * time.Millisecond
		cfg.PongTimeout = 2 * time.Second
		cfg.CallTimeout = 20 * time.Second
	})
	if _, err := c.GetAgent(t.Context(), ids[0]); err != nil {
		t.Fatal(err)
	}
	before := srv.Pongs()
	eventually(t, "five pings answered", func() bool { return srv.Pongs() >= before+5 }) // the idle link stays up
	if _, err := c.GetAgent(t.Context(), ids[0]); err != nil || srv.Connections() != 1 {
		t.Fatalf("after an idle spell with pongs: %v, %d connections; want the same link", err, srv.Connections())
	}

	srv.IgnorePings(true)
	srv.SetDelay("agents.get", 30*time.Second)
	// The call time-out is 20 s: the message naming the pings shows the
	// pong time-out ended the call.
	_, err := c.GetAgent(t.Context(), ids[0])
	wantCode(t, "call over a silent link", err, core.KindTimeout, "ehr_timeout")
	if !strings.Contains(err.Error(), "ping") {
		t.Errorf("error %q does not say the peer stopped answering pings", err)
	}

	srv.IgnorePings(false)
	srv.SetDelay("agents.get", 0)
	if _, err := c.GetAgent(t.Context(), ids[0]); err != nil {
		t.Fatalf("the call after the drop: %v", err)
	}
	if got := srv.Connections(); got != 2 {
		t.Errorf("connections = %d; want 2", got)
	}
}

func TestClient_SendsTheHandshakeCredentials(t *testing.T) {
	const secret = "Bearer s3cret-t0ken"
	srv := wsbottest.Start(t, wsbottest.WithAuthorization(secret))
	ids := seedAgents(srv, 1)
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) {
		cfg.Header = func(context.Context) (http.Header, error) {
			return http.Header{"Authorization": {secret}}, nil
		}
	})
	if _, err := c.GetAgent(t.Context(), ids[0]); err != nil {
		t.Fatalf("GetAgent with the right credentials: %v", err)
	}
	if got := srv.LastHeader().Get("Authorization"); got != secret {
		t.Errorf("handshake Authorization = %q; want %q", got, secret)
	}
}

func TestClient_RefusedHandshakeIsUnauthorized(t *testing.T) {
	const secret = "Basic d3Jvbmc6c2VjcmV0"
	srv := wsbottest.Start(t, wsbottest.WithAuthorization("Bearer right"))
	ids := seedAgents(srv, 1)
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) {
		cfg.BreakerFailures = 2
		cfg.Header = func(context.Context) (http.Header, error) {
			return http.Header{"Authorization": {secret}}, nil
		}
	})
	for i := range 5 { // refusals are answers: they do not open the breaker
		_, err := c.GetAgent(t.Context(), ids[0])
		wantCode(t, fmt.Sprintf("call %d", i), err, core.KindBadGateway, "ehr_unauthorized")
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "d3Jvbmc") {
			t.Errorf("the error quotes the credential: %v", err)
		}
		if !strings.Contains(err.Error(), "clinic-bot") {
			t.Errorf("the error does not name the EHR: %v", err)
		}
	}
	if srv.Refused() != 5 {
		t.Errorf("the bot refused %d handshakes; want 5", srv.Refused())
	}

	inBand := wsbottest.Start(t, wsbottest.WithAuthorization("Bearer right"), wsbottest.WithUnauthorizedInBand())
	c2 := newClient(t, inBand.URL(), nil)
	_, err := c2.ListAgents(t.Context(), ehr.AgentFilter{})
	wantCode(t, "in-band unauthorized", err, core.KindBadGateway, "ehr_unauthorized")
}

// refusingBot refuses every handshake with HTTP 401, over in-memory
// pipes (see wsbot.SetNetDial): no sockets, so it works in a synctest
// bubble.
type refusingBot struct{ handshakes atomic.Int64 }

func (b *refusingBot) dial(context.Context, string, string) (net.Conn, error) {
	client, server := net.Pipe()
	go func() {
		defer server.Close()
		if _, err := http.ReadRequest(bufio.NewReader(server)); err != nil {
			return
		}
		b.handshakes.Add(1) // before the answer: the client sees the count
		_, _ = io.WriteString(server, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
	}()
	return client, nil
}

// In a synctest bubble: the bubble's clock moves only when every goroutine
// waits, so no call can come late by chance, and the backoff is measured
// exactly.
func TestClient_ConcurrentCallsShareOneConnectionAttemptAndBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bot refusingBot
		c := newClient(t, "ws://clinic-bot.test/bot", func(cfg *wsbot.Config) {
			// Within the call time-out of 5 s: a backoff of [1 s, 2 s]
			// after one failure, [2 s, 4 s] after two.
			cfg.BackoffBase = 2 * time.Second
			cfg.BackoffMax = 4 * time.Second
		})
		wsbot.SetNetDial(c, bot.dial)
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				_, err := c.ListAgents(t.Context(), ehr.AgentFilter{})
				if _, code := codeOf(err); code != "ehr_unauthorized" {
					t.Errorf("concurrent call: %v; want ehr_unauthorized", err)
				}
			})
		}
		wg.Wait()
		// One attempt, and one more after the backoff for the calls that
		// came when the first had failed already: the clock reaches the
		// end of the backoff only once every call is waiting.
		refused := bot.handshakes.Load()
		if refused < 1 || refused > 2 {
			t.Errorf("64 concurrent calls made %d handshakes; want 1 or 2", refused)
		}
		// Within the backoff (the clock has not moved since the last
		// failure), a call that cannot wait fails at once and does not
		// dial.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.ListAgents(ctx, ehr.AgentFilter{}) // waiting would end in ehr_timeout
		wantCode(t, "call during the backoff", err, core.KindBadGateway, "ehr_unauthorized")
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the call during the backoff waited %v on the bubble's clock; want none", waited)
		}
		if n := bot.handshakes.Load(); n != refused {
			t.Errorf("the bot saw %d handshakes; want no new one", n)
		}
		// A call that can wait is attempted after the backoff: random in
		// [d/2, d], d = 2 s·2^(failures-1) capped at 4 s.
		start = time.Now()
		_, err = c.ListAgents(t.Context(), ehr.AgentFilter{})
		wantCode(t, "call after the backoff", err, core.KindBadGateway, "ehr_unauthorized")
		d := min(4*time.Second, 2*time.Second<<(refused-1))
		if waited := time.Since(start); waited < d/2 || waited > d {
			t.Errorf("the call after %d failures waited %v on the bubble's clock; want a backoff in [%v, %v]", refused, waited, d/2, d)
		}
		if n := bot.handshakes.Load(); n != refused+1 {
			t.Errorf("the bot saw %d handshakes; want %d", n, refused+1)
		}
	})
}

func TestClient_HeaderFailureIsPassedOn(t *testing.T) {
	srv := wsbottest.Start(t)
	authFailed := &core.Error{Kind: core.KindBadGateway, Code: "ehr_auth_failed", Message: "authentication to clinic-bot failed"}
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) {
		cfg.Header = func(context.Context) (http.Header, error) { return nil, authFailed }
	})
	_, err := c.ListAgents(t.Context(), ehr.AgentFilter{})
	wantCode(t, "header failure", err, core.KindBadGateway, "ehr_auth_failed")
	if srv.Connections() != 0 {
		t.Errorf("the client connected without credentials")
	}
}

func TestClient_BreakerOpensAfterRepeatedTransportFailures(t *testing.T) {
	srv := wsbottest.Start(t)
	url := srv.URL()
	srv.Close() // nobody listens any more
	c := newClient(t, url, func(cfg *wsbot.Config) {
		cfg.BreakerFailures = 3
		cfg.BreakerOpen = time.Minute
	})
	for i := range 3 {
		_, err := c.ListAgents(t.Context(), ehr.AgentFilter{})
		wantCode(t, fmt.Sprintf("call %d", i), err, core.KindBadGateway, "ehr_unreachable")
	}
	// Nobody listens: circuit_open rather than ehr_unreachable shows the
	// breaker answered without a dial.
	_, err := c.ListAgents(t.Context(), ehr.AgentFilter{})
	wantCode(t, "call after three failures", err, core.KindUnavailable, "circuit_open")
}

func TestClient_ProtocolErrorsDoNotOpenTheBreaker(t *testing.T) {
	srv := wsbottest.Start(t)
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) { cfg.BreakerFailures = 2 })
	for range 5 {
		if _, err := c.GetAgent(t.Context(), "nobody"); !errors.Is(err, ehr.ErrAgentNotFound) {
			t.Fatalf("GetAgent(unknown) = %v; want ErrAgentNotFound", err)
		}
	}
	if _, err := c.ListAgents(t.Context(), ehr.AgentFilter{}); err != nil {
		t.Errorf("ListAgents after protocol errors: %v", err)
	}
}

func TestClient_MapsProtocolErrors(t *testing.T) {
	srv := wsbottest.Start(t)
	agent := srv.AddAgent(ehr.Agent{Name: "Ana"}, []ehr.Period{{Start: future(9), End: future(12)}})
	c := newClient(t, srv.URL(), nil)
	ctx := t.Context()
	book := func(start, end time.Time) (ehr.Appointment, error) {
		return c.CreateAppointment(ctx, ehr.Appointment{AgentID: agent, Start: start, End: end,
			Patient: ehr.PatientContact{FirstName: "A", LastName: "B", Email: "a@b.example"}})
	}
	a, err := book(future(9), future(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := book(future(9).Add(30*time.Minute), future(10).Add(30*time.Minute)); !errors.Is(err, ehr.ErrAgentUnavailable) {
		t.Errorf("overlapping booking: %v; want ErrAgentUnavailable", err)
	}
	if _, err := book(future(13), future(14)); !errors.Is(err, ehr.ErrAgentUnavailable) {
		t.Errorf("booking outside free time: %v; want ErrAgentUnavailable", err)
	}
	if _, err := c.CreateAppointment(ctx, ehr.Appointment{AgentID: "nobody", Start: future(9), End: future(10)}); !errors.Is(err, ehr.ErrAgentNotFound) {
		t.Errorf("booking an unknown agent: %v; want ErrAgentNotFound", err)
	}
	if _, err := c.FreePeriods(ctx, "nobody", future(0), future(24)); !errors.Is(err, ehr.ErrAgentNotFound) {
		t.Errorf("FreePeriods of an unknown agent: %v; want ErrAgentNotFound", err)
	}
	_, err = book(future(11), future(10))
	wantCode(t, "end before start", err, core.KindInvalid, "validation_failed")
	if !strings.Contains(err.Error(), "end must be after start") || !strings.Contains(err.Error(), "clinic-bot") {
		t.Errorf("invalid: %v; want the peer's message and the EHR's name", err)
	}
	if _, err := c.CancelAppointment(ctx, a.ID, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelAppointment(ctx, a.ID, "again"); !errors.Is(err, ehr.ErrAlreadyCancelled) {
		t.Errorf("cancelling twice: %v; want ErrAlreadyCancelled", err)
	}
	_, err = c.RescheduleAppointment(ctx, a.ID, future(10), future(11))
	wantCode(t, "rescheduling a cancelled one", err, core.KindConflict, "ehr_conflict")
}

func TestClient_UnknownActionIsBadGateway(t *testing.T) {
	srv := wsbottest.Start(t)
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) { cfg.SearchAction = "patients.lookup" })
	_, err := c.SearchPatients(t.Context(), ehr.PatientQuery{Text: "Ana"})
	wantCode(t, "unknown action", err, core.KindBadGateway, "ehr_unknown_action")
	if !strings.Contains(err.Error(), "patients.lookup") {
		t.Errorf("error %v does not name the action", err)
	}
}

func TestClient_ReadsEveryStatusAndUnknownOnesAsPending(t *testing.T) {
	srv := wsbottest.Start(t)
	agent := srv.AddAgent(ehr.Agent{Name: "Ana"}, []ehr.Period{{Start: future(9), End: future(12)}})
	var logs strings.Builder
	var mu sync.Mutex
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) {
		cfg.Logger = slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
	})
	a, err := c.CreateAppointment(t.Context(), ehr.Appointment{AgentID: agent, Start: future(9), End: future(10),
		Patient: ehr.PatientContact{FirstName: "Secret", LastName: "Person", Email: "secret.person@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range ehr.AppointmentStatuses {
		srv.SetAppointmentStatus(a.ID, string(st))
		got, err := c.GetAppointment(t.Context(), a.ID)
		if err != nil || got.Status != st {
			t.Errorf("status %q read as %q, %v", st, got.Status, err)
		}
	}
	srv.SetAppointmentStatus(a.ID, "on-hold")
	got, err := c.GetAppointment(t.Context(), a.ID)
	if err != nil || got.Status != ehr.StatusPending {
		t.Errorf("unknown status read as %q, %v; want pending", got.Status, err)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "on-hold") || !strings.Contains(out, a.ID) {
		t.Errorf("log %s does not name the unknown status and the appointment", out)
	}
	if strings.Contains(out, "Secret") || strings.Contains(out, "secret.person") {
		t.Errorf("the log holds patient data: %s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestClient_SearchPatients(t *testing.T) {
	srv := wsbottest.Start(t)
	full := ehr.Patient{
		ID:          "p-ana",
		Name:        ehr.HumanName{Family: "Lopez", Given: []string{"Ana", "María"}, Text: "Ana María Lopez"},
		BirthDate:   "1980-02-01",
		Gender:      "female",
		Identifiers: []ehr.Identifier{{System: "urn:oid:1.2.3", Value: "MRN-77", Type: "MR"}},
		Telecom:     []ehr.ContactPoint{{System: "phone", Value: "+1 512 555 0100", Use: "mobile"}, {System: "email", Value: "ana@example.com"}},
		Address:     []ehr.Address{{Line: []string{"1 Main St"}, City: "Austin", State: "TX", PostalCode: "78701", Country: "US"}},
		LastUpdated: time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC),
	}
	srv.AddPatient(full)
	srv.AddPatient(ehr.Patient{ID: "p-ben", Name: ehr.HumanName{Family: "Lopez", Given: []string{"Ben"}}, Gender: "male",
		Telecom: []ehr.ContactPoint{{System: "phone", Value: "+1 512 555 0199"}}})
	for i := range 250 {
		srv.AddPatient(ehr.Patient{ID: fmt.Sprintf("p-many-%d", i), Name: ehr.HumanName{Family: "Many", Given: []string{"Pat"}}})
	}
	c := newClient(t, srv.URL(), nil)
	ctx := t.Context()

	got, err := c.SearchPatients(ctx, ehr.PatientQuery{Text: "ana lopez"})
	if err != nil || len(got) != 1 {
		t.Fatalf("search ana lopez = %+v, %v; want Ana", got, err)
	}
	want := full
	want.Source = "clinic-bot"
	if g := got[0]; g.ID != want.ID || g.Source != want.Source || g.Name.Text != want.Name.Text || g.Name.Family != want.Name.Family ||
		strings.Join(g.Name.Given, ",") != "Ana,María" || g.BirthDate != want.BirthDate || g.Gender != want.Gender ||
		fmt.Sprint(g.Identifiers) != fmt.Sprint(want.Identifiers) || fmt.Sprint(g.Telecom) != fmt.Sprint(want.Telecom) ||
		fmt.Sprint(g.Address) != fmt.Sprint(want.Address) || !g.LastUpdated.Equal(want.LastUpdated) {
		t.Errorf("patient = %+v;\nwant %+v", g, want)
	}

	for _, tc := range []struct {
		q    ehr.PatientQuery
		want []string
	}{
		{ehr.PatientQuery{Family: "lopez"}, []string{"p-ana", "p-ben"}},
		{ehr.PatientQuery{Family: "Lopez", Given: "be"}, []string{"p-ben"}},
		{ehr.PatientQuery{Family: "Lopez", Phone: "(512) 555-0100"}, []string{"p-ana"}},
		{ehr.PatientQuery{Identifier: "urn:oid:1.2.3|MRN-77"}, []string{"p-ana"}},
		{ehr.PatientQuery{Family: "Lopez", Gender: "male"}, []string{"p-ben"}},
		{ehr.PatientQuery{Family: "Lopez", BirthDate: "1980-02-01"}, []string{"p-ana"}},
		{ehr.PatientQuery{Family: "Lopez", UpdatedFrom: time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)}, []string{"p-ben"}},
		{ehr.PatientQuery{Family: "Lopez", UpdatedTo: time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)}, []string{"p-ana", "p-ben"}},
		{ehr.PatientQuery{Text: "nobody"}, nil},
	} {
		got, err := c.SearchPatients(ctx, tc.q)
		if err != nil {
			t.Errorf("%+v: %v", tc.q, err)
			continue
		}
		var ids []string
		for _, p := range got {
			ids = append(ids, p.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(tc.want) {
			t.Errorf("search %+v = %v; want %v", tc.q, ids, tc.want)
		}
		if got == nil {
			t.Errorf("search %+v returned nil; want an empty slice", tc.q)
		}
	}

	before := srv.Requests()
	many, err := c.SearchPatients(ctx, ehr.PatientQuery{Family: "Many", Max: 230})
	if err != nil || len(many) != 230 {
		t.Fatalf("search with Max 230 = %d records, %v", len(many), err)
	}
	if pages := srv.Requests() - before; pages != 3 {
		t.Errorf("the search asked %d pages; want 3 of 100", pages)
	}
	all, err := c.SearchPatients(ctx, ehr.PatientQuery{Family: "Many", Max: 1000})
	if err != nil || len(all) != 250 {
		t.Errorf("search of every record = %d, %v; want 250", len(all), err)
	}
}

func TestClient_ClosesCleanly(t *testing.T) {
	srv := wsbottest.Start(t)
	ids := seedAgents(srv, 64)
	// Goroutines of earlier tests still winding down only raise the baseline;
	// clientGoroutines below checks the client's own without one.
	base := runtime.NumGoroutine()

	c, err := wsbot.New(wsbot.Config{Name: "clinic-bot", URL: srv.URL(), BackoffBase: time.Millisecond, PingInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			if _, err := c.GetAgent(t.Context(), id); err != nil {
				t.Errorf("GetAgent: %v", err)
			}
		})
	}
	wg.Wait()
	srv.DropAll() // and reconnect (a call that meets the drop fails)
	eventually(t, "a call over a new link", func() bool {
		_, err := c.GetAgent(t.Context(), ids[0])
		return err == nil
	})
	if clientGoroutines() == 0 {
		t.Fatal("clientGoroutines sees none of a connected client's goroutines")
	}
	before := srv.Requests()
	// A call in flight when Close comes fails at once.
	srv.SetDelay("agents.get", 30*time.Second)
	inFlight := make(chan error, 1)
	go func() {
		_, err := c.GetAgent(t.Context(), ids[0])
		inFlight <- err
	}()
	eventually(t, "the call to reach the bot", func() bool { return srv.Requests() > before })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-inFlight:
		wantCode(t, "call in flight at Close", err, core.KindUnavailable, "ehr_closed")
	case <-time.After(2 * time.Second):
		t.Fatal("a call in flight at Close did not end")
	}
	_, err = c.GetAgent(t.Context(), ids[0])
	wantCode(t, "call after Close", err, core.KindUnavailable, "ehr_closed")
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	eventually(t, "the goroutines to end", func() bool {
		return srv.OpenConnections() == 0 && clientGoroutines() == 0 && runtime.NumGoroutine() <= base+1
	})
}

// clientGoroutines counts the goroutines with a frame of package wsbot (the
// client; not wsbot_test, not wsbotserver) in their stack.
func clientGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "/adapters/ehr/wsbot.") {
			n++
		}
	}
	return n
}

func TestNew_ValidatesTheConfig(t *testing.T) {
	for _, cfg := range []wsbot.Config{
		{URL: "ws://bot.example"},
		{Name: "b"},
		{Name: "b", URL: "https://bot.example"},
		{Name: "b", URL: "ws://"},
		{Name: "b", URL: "ws://user:pw-Zq7pwmarker@bot.example"},
		{Name: "b", URL: "ws://bot.example", CallTimeout: -time.Second},
	} {
		if _, err := wsbot.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted it", cfg)
		} else if strings.Contains(err.Error(), "Zq7pwmarker") {
			t.Errorf("New quotes the URL's password: %v", err)
		}
	}
	if _, err := wsbot.New(wsbot.Config{Name: "b", URL: "wss://bot.example/ws"}); err != nil {
		t.Errorf("New(valid) = %v", err)
	}
}

// TestClient_Throughput reports calls per second with 64 concurrent
// callers over one link (no assertion: the bench owns the target).
func TestClient_Throughput(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	srv := wsbottest.Start(t)
	ids := seedAgents(srv, 64)
	c := newClient(t, srv.URL(), nil)
	const perWorker = 100
	start := time.Now()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for range perWorker {
				if _, err := c.GetAgent(t.Context(), id); err != nil {
					t.Errorf("GetAgent: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("%d calls with 64 concurrent callers over %d connection(s) in %v: %.0f calls/s",
		64*perWorker, srv.Connections(), took, float64(64*perWorker)/took.Seconds())
}
