package wsbot

import (
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/logtest"
)

func sampleAppointment(status ehr.AppointmentStatus) ehr.Appointment {
	plus2 := time.FixedZone("", 2*3600)
	return ehr.Appointment{
		ID:         "apt-17",
		AgentID:    "agent-3",
		Start:      time.Date(2031, 5, 6, 10, 0, 0, 0, plus2),
		End:        time.Date(2031, 5, 6, 10, 45, 0, 0, plus2),
		Status:     status,
		Reason:     "Annual check-up",
		LocationID: "main-campus",
		Patient: ehr.PatientContact{
			FirstName: "María", LastName: "López", DateOfBirth: "1980-02-29",
			Email: "maria@example.com", Phone: "+34 600 000 000",
		},
		Source:     "clinic-bot",
		ExternalID: "EXT-17",
		CreatedAt:  time.Date(2031, 5, 1, 8, 30, 15, 123000000, time.UTC),
		UpdatedAt:  time.Date(2031, 5, 2, 9, 0, 0, 0, time.FixedZone("", -5*3600)),
	}
}

// sameInstantAndOffset compares times as the wire can carry them.
func sameInstantAndOffset(a, b time.Time) bool {
	_, oa := a.Zone()
	_, ob := b.Zone()
	return a.Equal(b) && oa == ob
}

func TestAppointment_RoundTripsEveryFieldAndStatus(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&logtest.Buffer{}, nil))
	for _, st := range ehr.AppointmentStatuses {
		in := sampleAppointment(st)
		body, err := json.Marshal(appointmentToWire(in))
		if err != nil {
			t.Fatal(err)
		}
		var w wireAppointment
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatal(err)
		}
		if w.Status != string(st) {
			t.Errorf("wire status of %q = %q; want the same name", st, w.Status)
		}
		out, err := appointmentFromWire(w, "clinic-bot", log)
		if err != nil {
			t.Fatalf("%s: appointmentFromWire: %v", st, err)
		}
		for _, tc := range []struct {
			name string
			a, b time.Time
		}{{"start", out.Start, in.Start}, {"end", out.End, in.End}, {"createdAt", out.CreatedAt, in.CreatedAt}, {"updatedAt", out.UpdatedAt, in.UpdatedAt}} {
			if !sameInstantAndOffset(tc.a, tc.b) {
				t.Errorf("%s: %s = %v; want %v", st, tc.name, tc.a, tc.b)
			}
		}
		out.Start, out.End, out.CreatedAt, out.UpdatedAt = in.Start, in.End, in.CreatedAt, in.UpdatedAt
		if !reflect.DeepEqual(out, in) {
			t.Errorf("%s: round trip = %+v; want %+v", st, out, in)
		}
	}
}

func TestAppointmentFromWire_WireStatusesEqualInternal(t *testing.T) {
	for _, st := range ehr.AppointmentStatuses {
		got, ok := statusFromWire(string(st))
		if !ok || got != st {
			t.Errorf("statusFromWire(%q) = %q, %v", st, got, ok)
		}
	}
}

func TestAppointmentFromWire_UnknownStatusIsPendingAndLoggedWithoutPatientData(t *testing.T) {
	var logs logtest.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	// The patient data are random markers that no timestamp or id can hold.
	patient := ehr.PatientContact{FirstName: "Mk" + rand.Text(), LastName: "Mk" + rand.Text(), DateOfBirth: "1913-04-05",
		Email: "mk" + strings.ToLower(rand.Text()) + "@example.org", Phone: "Mk" + rand.Text()}
	reason := "Mk" + rand.Text()
	for _, status := range []string{"arrived", "", "BOOKED!", strings.Repeat("x", 500)} {
		a := sampleAppointment(ehr.StatusBooked)
		a.Patient, a.Reason = patient, reason
		w := appointmentToWire(a)
		w.Status = status
		a, err := appointmentFromWire(w, "clinic-bot", log)
		if err != nil {
			t.Fatalf("status %q: %v", status, err)
		}
		if a.Status != ehr.StatusPending {
			t.Errorf("status %q read as %q; want pending", status, a.Status)
		}
	}
	out := logs.String()
	if strings.Count(out, "unknown appointment status") != 4 || !strings.Contains(out, `"status":"arrived"`) {
		t.Errorf("log = %s; want four warnings naming the status", out)
	}
	for _, private := range []string{patient.FirstName, patient.LastName, patient.DateOfBirth, patient.Email, patient.Phone, reason} {
		if strings.Contains(out, private) {
			t.Errorf("the log holds patient data %q: %s", private, out)
		}
	}
	if strings.Contains(out, strings.Repeat("x", 100)) {
		t.Errorf("the log quotes a long status whole")
	}
}

func TestAppointmentFromWire_ExternalIDDefaultsToID(t *testing.T) {
	w := appointmentToWire(sampleAppointment(ehr.StatusBooked))
	w.ExternalID, w.Source = "", "the-bot-says"
	a, err := appointmentFromWire(w, "clinic-bot", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if a.ExternalID != "apt-17" || a.ID != "apt-17" || a.Source != "clinic-bot" {
		t.Errorf("id %q externalId %q source %q; want apt-17, apt-17, clinic-bot", a.ID, a.ExternalID, a.Source)
	}
}

func TestAppointmentFromWire_RejectsBadTimes(t *testing.T) {
	for _, field := range []string{"start", "end", "createdAt", "updatedAt"} {
		w := appointmentToWire(sampleAppointment(ehr.StatusBooked))
		switch field {
		case "start":
			w.Start = "2031-05-06 10:00"
		case "end":
			w.End = "tomorrow"
		case "createdAt":
			w.CreatedAt = "2031-05-06T10:00:00" // no offset
		case "updatedAt":
			w.UpdatedAt = "1"
		}
		if _, err := appointmentFromWire(w, "clinic-bot", slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("bad %s: error = %v; want one naming the field", field, err)
		}
	}
}

func TestAgent_RoundTripsEveryField(t *testing.T) {
	in := ehr.Agent{ID: "agent-3", FirstName: "Ana", LastName: "Lopez", Name: "Dr. Ana Lopez", Specialty: "cardiology",
		Email: "ana@clinic.example", Timezone: "America/New_York", LocationIDs: []string{"main", "north"}}
	body, err := json.Marshal(agentToWire(in))
	if err != nil {
		t.Fatal(err)
	}
	var w wireAgent
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	if out := agentFromWire(w); !reflect.DeepEqual(out, in) {
		t.Errorf("round trip = %+v; want %+v", out, in)
	}
	for _, key := range []string{`"id"`, `"firstName"`, `"lastName"`, `"name"`, `"specialty"`, `"email"`, `"timezone"`, `"locationIds"`} {
		if !strings.Contains(string(body), key) {
			t.Errorf("wire agent %s lacks %s", body, key)
		}
	}
}

func TestAgentFromWire_FillsNameAndLocations(t *testing.T) {
	a := agentFromWire(wireAgent{ID: "a", FirstName: "Ana", LastName: "Lopez"})
	if a.Name != "Ana Lopez" || a.LocationIDs == nil {
		t.Errorf("agent = %+v; want the name made of its parts and empty (not nil) locations", a)
	}
}

func TestPatient_RoundTripsEveryField(t *testing.T) {
	in := ehr.Patient{
		ID:          "p-1",
		Source:      "clinic-bot",
		Name:        ehr.HumanName{Family: "López", Given: []string{"María", "José"}, Text: "María José López"},
		BirthDate:   "1980-02-29",
		Gender:      "female",
		Identifiers: []ehr.Identifier{{System: "urn:oid:1.2.3", Value: "MRN-77", Type: "MR"}, {Value: "X-1"}},
		Telecom:     []ehr.ContactPoint{{System: "phone", Value: "+15125550100", Use: "mobile"}, {System: "email", Value: "m@example.com"}},
		Address:     []ehr.Address{{Line: []string{"1 Main St", "Apt 2"}, City: "Austin", State: "TX", PostalCode: "78701", Country: "US"}},
		LastUpdated: time.Date(2024, 3, 4, 5, 6, 7, 890000000, time.UTC),
	}
	body, err := json.Marshal(patientToWire(in))
	if err != nil {
		t.Fatal(err)
	}
	var w wirePatient
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	out := patientFromWire(w, "clinic-bot")
	if !out.LastUpdated.Equal(in.LastUpdated) {
		t.Errorf("lastUpdated = %v; want %v", out.LastUpdated, in.LastUpdated)
	}
	out.LastUpdated = in.LastUpdated
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip = %+v;\nwant %+v", out, in)
	}
}

func TestPatientFromWire_Normalises(t *testing.T) {
	w := wirePatient{
		ID:          " p-2 ",
		Name:        wireName{Family: " Doe ", Given: []string{" Jane", ""}},
		BirthDate:   "1990-07-01T00:00:00Z",
		Gender:      "FEMALE",
		Identifiers: []wireIdentifier{{Value: " "}, {Value: "A"}},
		Telecom:     []wireTelecom{{Value: ""}},
		Address:     []wireAddress{{}},
		LastUpdated: "2024-03-04T05:06:07+02:00",
	}
	p := patientFromWire(w, "bot")
	if p.ID != "p-2" || p.Name.Text != "Jane Doe" || p.Name.Family != "Doe" || len(p.Name.Given) != 1 ||
		p.BirthDate != "1990-07-01" || p.Gender != "female" || len(p.Identifiers) != 1 || p.Telecom != nil ||
		p.Address != nil || p.LastUpdated.Location() != time.UTC || p.LastUpdated.Hour() != 3 {
		t.Errorf("patient = %+v", p)
	}
	if g := patientFromWire(wirePatient{Gender: "robot", BirthDate: "yesterday"}, "bot"); g.Gender != "" || g.BirthDate != "" {
		t.Errorf("unknown gender and bad birth date = %q, %q; want both empty", g.Gender, g.BirthDate)
	}
}

func TestPeriod_RoundTrips(t *testing.T) {
	in := ehr.Period{Start: time.Date(2031, 1, 2, 9, 0, 0, 0, time.FixedZone("", -5*3600)), End: time.Date(2031, 1, 2, 9, 30, 0, 0, time.UTC)}
	out, err := periodFromWire(periodToWire(in))
	if err != nil || !sameInstantAndOffset(out.Start, in.Start) || !sameInstantAndOffset(out.End, in.End) {
		t.Errorf("round trip = %+v, %v; want %+v", out, err, in)
	}
}

func TestFreeSpans_ClipsSortsAndJoins(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2031, 1, 2, h, m, 0, 0, time.UTC) }
	slot := func(a, b time.Time) wireSlot { return periodToWire(ehr.Period{Start: a, End: b}) }
	got, err := freeSpans([]wireSlot{
		slot(at(13, 0), at(13, 30)), slot(at(13, 30), at(14, 0)), // touching: joined
		slot(at(8, 0), at(10, 0)),   // clipped at from
		slot(at(15, 0), at(18, 0)),  // clipped at to
		slot(at(11, 0), at(11, 0)),  // empty
		slot(at(17, 0), at(17, 30)), // past to
	}, at(9, 0), at(16, 0))
	want := []ehr.Period{{Start: at(9, 0), End: at(10, 0)}, {Start: at(13, 0), End: at(14, 0)}, {Start: at(15, 0), End: at(16, 0)}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("freeSpans = %v, %v; want %v", got, err, want)
	}
	if got, err := freeSpans(nil, at(9, 0), at(10, 0)); err != nil || got == nil || len(got) != 0 {
		t.Errorf("freeSpans(nil) = %#v, %v; want an empty slice", got, err)
	}
	if _, err := freeSpans([]wireSlot{{Start: "x", End: "y"}}, at(9, 0), at(10, 0)); err == nil {
		t.Error("freeSpans accepted a bad time")
	}
}

func TestEncodeRequest_IsTheProtocolFrame(t *testing.T) {
	frame := encodeRequest("ab12-1z", `we"ird`, []byte(`{"id":"x"}`))
	var f struct {
		ID, Type, Action string
		Payload          map[string]string
	}
	if err := json.Unmarshal(frame, &f); err != nil {
		t.Fatalf("frame %s: %v", frame, err)
	}
	if f.ID != "ab12-1z" || f.Type != "request" || f.Action != `we"ird` || f.Payload["id"] != "x" {
		t.Errorf("frame = %s", frame)
	}
}

func TestBackoff_GrowsWithJitterAndIsCapped(t *testing.T) {
	c := &Client{backoffBase: 100 * time.Millisecond, backoffMax: time.Second}
	if d := c.backoff(0); d != 0 {
		t.Errorf("backoff(0) = %v; want 0", d)
	}
	for n, ceiling := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 60: time.Second} {
		for range 50 {
			if d := c.backoff(n); d < ceiling/2 || d > ceiling {
				t.Fatalf("backoff(%d) = %v; want in [%v, %v]", n, d, ceiling/2, ceiling)
			}
		}
	}
}
