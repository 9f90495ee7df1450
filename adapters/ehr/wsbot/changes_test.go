package wsbot_test

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// The bot answers appointments.changes in no particular order: the
// client sorts, cuts at max and reads the rest on the next call.
func TestClient_ChangeFeedContract(t *testing.T) {
	ehrtest.TestChangeFeed(t, func(t *testing.T) ehrtest.ChangeFeedBackend {
		srv := wsbottest.Start(t)
		c := newClient(t, srv.URL(), nil)
		must := func(t *testing.T, ok bool, id string) {
			if !ok {
				t.Fatalf("no appointment %s in the bot", id)
			}
		}
		return ehrtest.ChangeFeedBackend{
			Feed: c, Scheduler: c,
			AddAgent: func(t *testing.T, a ehr.Agent, free []ehr.Period) string { return srv.AddAgent(a, free) },
			Book:     func(t *testing.T, a ehr.Appointment) string { return srv.AddAppointment(a) },
			Cancel:   func(t *testing.T, id string) { must(t, srv.SetAppointmentStatus(id, "cancelled"), id) },
			Move: func(t *testing.T, id string, start, end time.Time) {
				must(t, srv.MoveAppointment(id, start, end), id)
			},
			SetStatus: func(t *testing.T, id string, st ehr.AppointmentStatus) {
				must(t, srv.SetAppointmentStatus(id, string(st)), id)
			},
		}
	})
}

func TestClient_AppointmentChangesOfABotWithoutTheAction(t *testing.T) {
	srv := wsbottest.Start(t, wsbottest.WithoutChanges())
	c := newClient(t, srv.URL(), nil)
	_, err := c.AppointmentChanges(t.Context(), time.Time{}, 10)
	if !errors.Is(err, ehr.ErrChangesNotSupported) {
		t.Fatalf("AppointmentChanges of a bot without the action: %v; want ErrChangesNotSupported", err)
	}
	// The bot still answers the rest of the protocol.
	if _, err := c.ListAgents(t.Context(), ehr.AgentFilter{}); err != nil {
		t.Errorf("ListAgents after unknown_action: %v", err)
	}
}

// Items without a known status, an agent or a start before their end are
// left out and logged by id only; the feed goes on past them.
func TestClient_AppointmentChangesSkipsUnusableItemsAndLogsNoPatientData(t *testing.T) {
	srv := wsbottest.Start(t)
	var (
		mu   sync.Mutex
		logs strings.Builder
	)
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) {
		cfg.Logger = slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
	})
	good := ehr.Appointment{AgentID: "agent-x", Start: future(9), End: future(10),
		Patient: ehr.PatientContact{FirstName: "Zebulon", LastName: "Quixotic", Email: "zq.private@example.org"}}
	first := srv.AddAppointment(good)
	unknown := srv.AddAppointment(good)
	srv.SetAppointmentStatus(unknown, "teleported")
	noAgent := good
	noAgent.AgentID = ""
	noAgentID := srv.AddAppointment(noAgent)
	backwards := good
	backwards.Start, backwards.End = good.End, good.Start
	backwardsID := srv.AddAppointment(backwards)
	last := srv.AddAppointment(good)

	b, err := c.AppointmentChanges(t.Context(), time.Time{}, 100)
	if err != nil || b.More || !b.Clock.IsZero() {
		t.Fatalf("AppointmentChanges: more %v, clock %v, %v; want all, and no clock (the protocol tells none)", b.More, b.Clock, err)
	}
	cs := b.Changes
	var ids []string
	for _, ch := range cs {
		ids = append(ids, ch.Appointment.ID)
		if ch.Version != ch.Appointment.UpdatedAt.UTC().Format(time.RFC3339Nano) {
			t.Errorf("%s: version %q; want its updatedAt", ch.Appointment.ID, ch.Version)
		}
	}
	if !slices.Equal(ids, []string{first, last}) {
		t.Errorf("changes %v; want only %s and %s", ids, first, last)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	for _, id := range []string{unknown, noAgentID, backwardsID} {
		if !strings.Contains(out, `"appointment":"`+id+`"`) {
			t.Errorf("no log line names the skipped %s:\n%s", id, out)
		}
	}
	for _, secret := range []string{"Zebulon", "Quixotic", "zq.private"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds patient data %q:\n%s", secret, out)
		}
	}
}
