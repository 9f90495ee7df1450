package wsbottest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/wsbottest"
)

type frame struct {
	ID     string          `json:"id"`
	Type   string          `json:"type"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func dial(t *testing.T, srv *wsbottest.Server, h http.Header) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(srv.URL(), h)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func send(t *testing.T, ws *websocket.Conn, id, action string, payload any) {
	t.Helper()
	msg := map[string]any{"id": id, "type": "request", "action": action, "payload": payload}
	if err := ws.WriteJSON(msg); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func read(t *testing.T, ws *websocket.Conn) frame {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var f frame
	if err := ws.ReadJSON(&f); err != nil {
		t.Fatalf("read: %v", err)
	}
	return f
}

func call(t *testing.T, ws *websocket.Conn, action string, payload any) frame {
	t.Helper()
	send(t, ws, "1", action, payload)
	return read(t, ws)
}

func errCode(f frame) string {
	if f.Error == nil {
		return ""
	}
	return f.Error.Code
}

func TestServer_AnswersWithTheContractsErrorCodes(t *testing.T) {
	srv := wsbottest.Start(t)
	day := time.Date(2031, 1, 6, 0, 0, 0, 0, time.UTC)
	agent := srv.AddAgent(ehr.Agent{Name: "Ana"}, []ehr.Period{{Start: day.Add(9 * time.Hour), End: day.Add(12 * time.Hour)}})
	ws := dial(t, srv, nil)
	at := func(h int) string { return day.Add(time.Duration(h) * time.Hour).Format(time.RFC3339) }

	f := call(t, ws, "appointments.create", map[string]any{"agentId": agent, "start": at(9), "end": at(10)})
	if !f.OK || f.ID != "1" || f.Type != "response" {
		t.Fatalf("create = %+v", f)
	}
	var a struct{ ID, Status string }
	_ = json.Unmarshal(f.Result, &a)
	if a.Status != "booked" || a.ID == "" {
		t.Errorf("created = %s", f.Result)
	}
	for _, c := range []struct {
		action  string
		payload any
		code    string
	}{
		{"appointments.create", map[string]any{"agentId": agent, "start": at(9), "end": at(11)}, "agent_unavailable"},
		{"appointments.create", map[string]any{"agentId": agent, "start": at(12), "end": at(13)}, "agent_unavailable"},
		{"appointments.create", map[string]any{"agentId": "nobody", "start": at(9), "end": at(10)}, "not_found"},
		{"appointments.create", map[string]any{"agentId": agent, "start": at(10), "end": at(9)}, "invalid"},
		{"appointments.get", map[string]any{"id": "nothing"}, "not_found"},
		{"appointments.cancel", map[string]any{"id": a.ID}, ""},
		{"appointments.cancel", map[string]any{"id": a.ID}, "conflict"},
		{"appointments.reschedule", map[string]any{"id": a.ID, "start": at(10), "end": at(11)}, "conflict"},
		{"agents.get", map[string]any{"id": "nobody"}, "not_found"},
		{"agents.list", map[string]any{"page": -1}, "invalid"},
		{"agents.fly", map[string]any{}, "unknown_action"},
	} {
		if f := call(t, ws, c.action, c.payload); errCode(f) != c.code || f.OK != (c.code == "") {
			t.Errorf("%s %v = %+v; want code %q", c.action, c.payload, f, c.code)
		}
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if f := read(t, ws); errCode(f) != "invalid" {
		t.Errorf("malformed frame answered %+v; want invalid", f)
	}
}

func TestServer_AvailabilityTakesDatesAndADuration(t *testing.T) {
	srv := wsbottest.Start(t)
	ny, _ := time.LoadLocation("America/New_York")
	day := time.Date(2031, 1, 6, 0, 0, 0, 0, ny)
	agent := srv.AddAgent(ehr.Agent{Name: "Ana", Timezone: "America/New_York"}, []ehr.Period{
		{Start: day.Add(9 * time.Hour), End: day.Add(10*time.Hour + 15*time.Minute)},
		{Start: day.AddDate(0, 0, 1).Add(9 * time.Hour), End: day.AddDate(0, 0, 1).Add(10 * time.Hour)},
	})
	ws := dial(t, srv, nil)
	f := call(t, ws, "agents.availability", map[string]any{"agentId": agent, "from": "2031-01-06", "to": "2031-01-06", "duration": 30})
	var res struct {
		AgentID, Timezone string
		Slots             []struct{ Start, End time.Time }
	}
	if err := json.Unmarshal(f.Result, &res); err != nil || !f.OK {
		t.Fatalf("availability = %+v, %v", f, err)
	}
	if res.AgentID != agent || res.Timezone != "America/New_York" || len(res.Slots) != 2 ||
		!res.Slots[0].Start.Equal(day.Add(9*time.Hour)) || !res.Slots[1].End.Equal(day.Add(10*time.Hour)) {
		t.Errorf("availability = %+v; want two 30-minute slots on the 6th only", res)
	}
}

func TestServer_RefusesABadHandshake(t *testing.T) {
	srv := wsbottest.Start(t, wsbottest.WithAuthorization("Bearer right"))
	_, resp, err := websocket.DefaultDialer.Dial(srv.URL(), http.Header{"Authorization": {"Bearer wrong"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial with a wrong credential = %v, %v; want HTTP 401", resp, err)
	}
	if srv.Refused() != 1 || srv.Connections() != 0 {
		t.Errorf("refused %d, connections %d; want 1, 0", srv.Refused(), srv.Connections())
	}
	dial(t, srv, http.Header{"Authorization": {"Bearer right"}})
	if srv.Connections() != 1 {
		t.Errorf("connections = %d; want 1", srv.Connections())
	}
}

func TestServer_AnswersOutOfOrder(t *testing.T) {
	srv := wsbottest.Start(t)
	srv.SetOutOfOrder(4)
	ws := dial(t, srv, nil)
	for i := range 4 {
		send(t, ws, fmt.Sprint(i), "agents.list", map[string]any{})
	}
	var got []string
	for range 4 {
		got = append(got, read(t, ws).ID)
	}
	if fmt.Sprint(got) != "[3 2 1 0]" {
		t.Errorf("answers came in the order %v; want [3 2 1 0]", got)
	}
}

func TestServer_DropsAfterNRequests(t *testing.T) {
	srv := wsbottest.Start(t)
	ws := dial(t, srv, nil)
	srv.DropAfter(1)
	if f := call(t, ws, "agents.list", nil); !f.OK {
		t.Fatalf("first request = %+v", f)
	}
	send(t, ws, "2", "agents.list", nil)
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("the second request was answered; want the connection dropped")
	}
}

func TestServer_CanStopAnsweringPings(t *testing.T) {
	srv := wsbottest.Start(t)
	ws := dial(t, srv, nil)
	pongs := make(chan struct{}, 10)
	ws.SetPongHandler(func(string) error { pongs <- struct{}{}; return nil })
	go func() {
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	ping := func() bool {
		if err := ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-pongs:
			return true
		case <-time.After(300 * time.Millisecond):
			return false
		}
	}
	if !ping() {
		t.Error("no pong to a ping")
	}
	srv.IgnorePings(true)
	if ping() {
		t.Error("a pong came while pings are ignored")
	}
	srv.IgnorePings(false)
	if !ping() {
		t.Error("no pong after pings are answered again")
	}
}
