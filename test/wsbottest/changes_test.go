package wsbottest_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/wsbottest"
)

type changedItem struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	UpdatedAt string `json:"updatedAt"`
}

func changesOf(t *testing.T, f frame) map[string]changedItem {
	t.Helper()
	if !f.OK {
		t.Fatalf("appointments.changes = %+v", f)
	}
	var res struct{ Items []changedItem }
	if err := json.Unmarshal(f.Result, &res); err != nil {
		t.Fatal(err)
	}
	out := map[string]changedItem{}
	for _, it := range res.Items {
		out[it.ID] = it
	}
	return out
}

// Every change, through the protocol or the EHR's own screens (the
// server's methods), moves updatedAt strictly later; appointments.changes
// answers those after since.
func TestServer_AppointmentChangesAnswersTheChangesAfterSince(t *testing.T) {
	srv := wsbottest.Start(t)
	day := time.Date(2031, 1, 6, 0, 0, 0, 0, time.UTC)
	agent := srv.AddAgent(ehr.Agent{Name: "Ana"}, []ehr.Period{{Start: day, End: day.Add(24 * time.Hour)}})
	ws := dial(t, srv, nil)
	a := srv.AddAppointment(ehr.Appointment{AgentID: agent, Start: day.Add(9 * time.Hour), End: day.Add(10 * time.Hour)})
	all := changesOf(t, call(t, ws, "appointments.changes", map[string]any{}))
	if len(all) != 1 || all[a].Status != "booked" {
		t.Fatalf("changes without since = %+v; want %s booked", all, a)
	}
	since := all[a].UpdatedAt
	f := call(t, ws, "appointments.create", map[string]any{"agentId": agent,
		"start": day.Add(11 * time.Hour).Format(time.RFC3339), "end": day.Add(12 * time.Hour).Format(time.RFC3339)})
	var b changedItem
	_ = json.Unmarshal(f.Result, &b)
	srv.SetAppointmentStatus(a, "checked_in")
	got := changesOf(t, call(t, ws, "appointments.changes", map[string]any{"since": since}))
	if len(got) != 2 || got[a].Status != "checked_in" || got[b.ID].Status != "booked" {
		t.Fatalf("changes since %s = %+v; want %s checked_in and %s booked", since, got, a, b.ID)
	}
	ta, _ := time.Parse(time.RFC3339Nano, got[a].UpdatedAt)
	tb, _ := time.Parse(time.RFC3339Nano, got[b.ID].UpdatedAt)
	t0, _ := time.Parse(time.RFC3339Nano, since)
	if !t0.Before(tb) || !tb.Before(ta) {
		t.Errorf("updatedAt %s, then %s, then %s; want strictly later each time", since, got[b.ID].UpdatedAt, got[a].UpdatedAt)
	}
	if f := call(t, ws, "appointments.changes", map[string]any{"since": "yesterday"}); errCode(f) != "invalid" {
		t.Errorf("since not RFC 3339 = %+v; want invalid", f)
	}
}

func TestServer_WithoutChangesAnswersUnknownAction(t *testing.T) {
	srv := wsbottest.Start(t, wsbottest.WithoutChanges())
	ws := dial(t, srv, nil)
	if f := call(t, ws, "appointments.changes", map[string]any{}); errCode(f) != "unknown_action" {
		t.Errorf("appointments.changes of a bot without it = %+v; want unknown_action", f)
	}
}

// A late answer: the bot makes the change at once (other connections see
// it) and holds the answer.
func TestServer_LateAnswerMakesTheChangeFirst(t *testing.T) {
	srv := wsbottest.Start(t)
	day := time.Date(2031, 1, 6, 0, 0, 0, 0, time.UTC)
	agent := srv.AddAgent(ehr.Agent{Name: "Ana"}, []ehr.Period{{Start: day, End: day.Add(24 * time.Hour)}})
	a := srv.AddAppointment(ehr.Appointment{AgentID: agent, Start: day.Add(9 * time.Hour), End: day.Add(10 * time.Hour)})
	srv.SetLateAnswer("appointments.cancel", time.Hour)
	caller, other := dial(t, srv, nil), dial(t, srv, nil)
	send(t, caller, "c-1", "appointments.cancel", map[string]any{"id": a, "reason": "late"})
	deadline := time.Now().Add(5 * time.Second)
	for changesOf(t, call(t, other, "appointments.changes", map[string]any{}))[a].Status != "cancelled" {
		if time.Now().After(deadline) {
			t.Fatal("the cancellation never showed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = caller.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, msg, err := caller.ReadMessage(); err == nil {
		t.Fatalf("answered at once: %s", msg)
	}
	srv.SetLateAnswer("appointments.cancel", 0)
	if f := call(t, other, "appointments.cancel", map[string]any{"id": a}); errCode(f) != "conflict" {
		t.Fatalf("cancelling again without a late answer = %+v", f)
	}
}
