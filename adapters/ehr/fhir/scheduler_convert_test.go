package fhir

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// capture is a logger that keeps what it logs, as JSON lines.
func capture() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewJSONHandler(&buf, nil)), &buf
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// fullAppointment sets every field of the internal model.
func fullAppointment(st ehr.AppointmentStatus) ehr.Appointment {
	plus2 := time.FixedZone("", 2*3600)
	minus5 := time.FixedZone("", -5*3600)
	return ehr.Appointment{
		ID:         "appt-7.a",
		AgentID:    "prac-1",
		Start:      time.Date(2031, 3, 4, 9, 30, 0, 0, plus2),
		End:        time.Date(2031, 3, 4, 10, 15, 0, 500_000_000, plus2),
		Status:     st,
		Reason:     "Annual check-up, fasting",
		LocationID: "loc-42",
		Patient: ehr.PatientContact{
			FirstName:   "Mary Ann",
			LastName:    "O'Neil-Smith",
			DateOfBirth: "1980-02-29",
			Email:       "mary.ann@example.org",
			Phone:       "+1 (555) 010-0199",
		},
		Source:     "clinic-a",
		ExternalID: "appt-7.a",
		CreatedAt:  time.Date(2031, 1, 2, 3, 4, 5, 123_000_000, time.UTC),
		UpdatedAt:  time.Date(2031, 1, 5, 6, 7, 8, 0, minus5),
	}
}

// sameAppointment compares two appointments: times by instant and offset.
func sameAppointment(t *testing.T, got, want ehr.Appointment) {
	t.Helper()
	for _, tt := range []struct {
		name      string
		got, want time.Time
	}{
		{"Start", got.Start, want.Start}, {"End", got.End, want.End},
		{"CreatedAt", got.CreatedAt, want.CreatedAt}, {"UpdatedAt", got.UpdatedAt, want.UpdatedAt},
	} {
		_, go1 := tt.got.Zone()
		_, wo := tt.want.Zone()
		if !tt.got.Equal(tt.want) || go1 != wo {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	got.Start, got.End, got.CreatedAt, got.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	want.Start, want.End, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("appointment =\n%+v\nwant\n%+v", got, want)
	}
}

// roundTrip converts a to FHIR JSON and back.
func roundTrip(t *testing.T, a ehr.Appointment, log *slog.Logger) (ehr.Appointment, []byte) {
	t.Helper()
	raw, err := json.Marshal(fhirAppointment(a, log))
	if err != nil {
		t.Fatal(err)
	}
	var ap appointment
	if err := json.Unmarshal(raw, &ap); err != nil {
		t.Fatal(err)
	}
	return toAppointment(ap, "clinic-a", log), raw
}

func TestAppointment_RoundTripsEveryFieldAndEveryStatus(t *testing.T) {
	for _, st := range ehr.AppointmentStatuses {
		t.Run(string(st), func(t *testing.T) {
			log, buf := capture()
			want := fullAppointment(st)
			got, raw := roundTrip(t, want, log)
			sameAppointment(t, got, want)
			if buf.Len() != 0 {
				t.Errorf("logged %s", buf)
			}
			if !json.Valid(raw) || !strings.Contains(string(raw), `"resourceType":"Appointment"`) {
				t.Errorf("FHIR JSON %s", raw)
			}
		})
	}
}

func TestAppointment_RoundTripsSparseAppointments(t *testing.T) {
	tests := []struct {
		name string
		a    ehr.Appointment
	}{
		{"no patient, location or reason", ehr.Appointment{ID: "a1", ExternalID: "a1", AgentID: "p1", Status: ehr.StatusBooked,
			Start: time.Date(2031, 1, 1, 9, 0, 0, 0, time.UTC), End: time.Date(2031, 1, 1, 9, 30, 0, 0, time.UTC), Source: "clinic-a"}},
		{"patient with e-mail only", ehr.Appointment{ID: "a2", ExternalID: "a2", AgentID: "p1", Status: ehr.StatusPending,
			Patient: ehr.PatientContact{LastName: "Doe", Email: "d@example.org"}, Source: "clinic-a"}},
		{"patient with phone only", ehr.Appointment{ID: "a3", ExternalID: "a3", AgentID: "p1", Status: ehr.StatusNoShow,
			Patient: ehr.PatientContact{FirstName: "Jo", Phone: "5550100"}, Source: "clinic-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := roundTrip(t, tt.a, discard())
			sameAppointment(t, got, tt.a)
		})
	}
}

func TestAppointment_WritesTheFHIRShape(t *testing.T) {
	_, raw := roundTrip(t, fullAppointment(ehr.StatusCheckedIn), discard())
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"resourceType": "Appointment",
		"id":           "appt-7.a",
		"meta":         map[string]any{"lastUpdated": "2031-01-05T06:07:08-05:00"},
		"status":       "checked-in",
		"description":  "Annual check-up, fasting",
		"start":        "2031-03-04T09:30:00+02:00",
		"end":          "2031-03-04T10:15:00.5+02:00",
		"created":      "2031-01-02T03:04:05.123Z",
		"contained": []any{map[string]any{
			"resourceType": "Patient", "id": "patient",
			"name":      []any{map[string]any{"family": "O'Neil-Smith", "given": []any{"Mary Ann"}}},
			"birthDate": "1980-02-29",
			"telecom": []any{
				map[string]any{"system": "email", "value": "mary.ann@example.org"},
				map[string]any{"system": "phone", "value": "+1 (555) 010-0199"},
			},
		}},
		"participant": []any{
			map[string]any{"actor": map[string]any{"reference": "Practitioner/prac-1"}, "status": "accepted"},
			map[string]any{"actor": map[string]any{"reference": "Location/loc-42"}, "status": "accepted"},
			map[string]any{"actor": map[string]any{"reference": "#patient", "display": "Mary Ann O'Neil-Smith"}, "status": "accepted"},
		},
	}
	if !reflect.DeepEqual(m, want) {
		got, _ := json.MarshalIndent(m, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("FHIR JSON =\n%s\nwant\n%s", got, exp)
	}
}

// The contract's mapping, FHIR → internal, and the code each internal
// status is written back as.
func TestAppointmentStatus_MapsEveryFHIRCodeAndBack(t *testing.T) {
	tests := []struct {
		code     string
		internal ehr.AppointmentStatus
		back     string
	}{
		{"proposed", ehr.StatusPending, "pending"},
		{"pending", ehr.StatusPending, "pending"},
		{"waitlist", ehr.StatusPending, "pending"},
		{"booked", ehr.StatusBooked, "booked"},
		{"arrived", ehr.StatusCheckedIn, "checked-in"},
		{"checked-in", ehr.StatusCheckedIn, "checked-in"},
		{"fulfilled", ehr.StatusFulfilled, "fulfilled"},
		{"cancelled", ehr.StatusCancelled, "cancelled"},
		{"entered-in-error", ehr.StatusCancelled, "cancelled"},
		{"noshow", ehr.StatusNoShow, "noshow"},
	}
	covered := map[ehr.AppointmentStatus]bool{}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			log, buf := capture()
			a := toAppointment(appointment{ID: "x", Status: tt.code}, "clinic-a", log)
			if a.Status != tt.internal {
				t.Errorf("%s → %s, want %s", tt.code, a.Status, tt.internal)
			}
			if back := fhirAppointment(a, log).Status; back != tt.back {
				t.Errorf("%s → %s → %s, want %s", tt.code, a.Status, back, tt.back)
			}
			if buf.Len() != 0 {
				t.Errorf("logged %s", buf)
			}
		})
		covered[tt.internal] = true
	}
	for _, st := range ehr.AppointmentStatuses {
		if !covered[st] {
			t.Errorf("internal status %s has no FHIR code", st)
		}
		for _, code := range fhirStatusCodes(st) {
			if fromFHIRStatus[code] != st {
				t.Errorf("search code %s of %s maps to %s", code, st, fromFHIRStatus[code])
			}
		}
	}
	if got := strings.Join(fhirStatusCodes(ehr.StatusPending), ","); got != "pending,proposed,waitlist" {
		t.Errorf("codes of pending = %s", got)
	}
	if got := strings.Join(fhirStatusCodes(ehr.StatusCancelled), ","); got != "cancelled,entered-in-error" {
		t.Errorf("codes of cancelled = %s", got)
	}
}

func TestAppointmentStatus_UnknownIsPendingAndLoggedWithoutPatientData(t *testing.T) {
	// The patient data are random markers that no timestamp or id can hold.
	patient := ehr.PatientContact{FirstName: "Mk" + rand.Text(), LastName: "Mk" + rand.Text(), DateOfBirth: "1913-04-05",
		Email: "mk" + strings.ToLower(rand.Text()) + "@example.org", Phone: "Mk" + rand.Text()}
	reason := "Mk" + rand.Text()
	for _, code := range []string{"", "BOOKED-ISH", "in-progress", "\x00weird\nstatus"} {
		log, buf := capture()
		a := fullAppointment(ehr.StatusBooked)
		a.Patient, a.Reason = patient, reason
		ap := fhirAppointment(a, log)
		ap.Status = code
		got := toAppointment(ap, "clinic-a", log)
		if got.Status != ehr.StatusPending {
			t.Errorf("status %q → %s, want pending", code, got.Status)
		}
		out := buf.String()
		if !strings.Contains(out, "unknown appointment status") || !strings.Contains(out, "appt-7.a") {
			t.Errorf("status %q: log %q lacks the warning or the id", code, out)
		}
		for _, secret := range []string{patient.FirstName, patient.LastName, patient.DateOfBirth, patient.Email, patient.Phone, reason} {
			if strings.Contains(out, secret) {
				t.Errorf("status %q: log shows patient data %q: %s", code, secret, out)
			}
		}
	}
	// Case and spaces are forgiven.
	log, buf := capture()
	if got := toAppointment(appointment{ID: "x", Status: " Booked "}, "s", log).Status; got != ehr.StatusBooked || buf.Len() != 0 {
		t.Errorf("' Booked ' → %s (log %s)", got, buf)
	}
	// An unknown internal status is written as pending.
	if got := fhirAppointment(ehr.Appointment{Status: "odd"}, discard()).Status; got != "pending" {
		t.Errorf("internal odd → %s", got)
	}
}

func TestToAppointment_ReadsOtherShapesOfFHIR(t *testing.T) {
	body := `{"resourceType":"Appointment","id":"ext-9","status":"booked",
	  "meta":{"versionId":"3","lastUpdated":"2031-02-03T04:05:06.789Z"},
	  "reasonCode":[{"coding":[{"system":"http://snomed.info/sct","code":"1","display":"Back pain"}],"text":"back"}],
	  "start":"2031-05-06T07:00:00Z","end":"2031-05-06T07:20:00Z",
	  "slot":[{"reference":"Slot/1"}],
	  "participant":[
	    {"actor":{"reference":"Patient/77","display":"Ana Lucia Ruiz"},"status":"accepted"},
	    {"type":[{"text":"x"}],"status":"accepted"},
	    {"actor":{"reference":"https://ehr.example/fhir/Practitioner/p-2/_history/4"},"status":"accepted"},
	    {"actor":{"reference":"Location/l-1"},"status":"tentative"},
	    {"actor":{"reference":"Location/l-2"},"status":"accepted"}]}`
	var ap appointment
	if err := json.Unmarshal([]byte(body), &ap); err != nil {
		t.Fatal(err)
	}
	got := toAppointment(ap, "clinic-b", discard())
	want := ehr.Appointment{
		ID: "ext-9", ExternalID: "ext-9", AgentID: "p-2", LocationID: "l-1", Status: ehr.StatusBooked,
		Reason: "Back pain", Source: "clinic-b",
		Start:     time.Date(2031, 5, 6, 7, 0, 0, 0, time.UTC),
		End:       time.Date(2031, 5, 6, 7, 20, 0, 0, time.UTC),
		CreatedAt: time.Date(2031, 2, 3, 4, 5, 6, 789_000_000, time.UTC), // no created: lastUpdated
		UpdatedAt: time.Date(2031, 2, 3, 4, 5, 6, 789_000_000, time.UTC),
		Patient:   ehr.PatientContact{FirstName: "Ana Lucia", LastName: "Ruiz"},
	}
	sameAppointment(t, got, want)
}

func TestToAppointment_FindsTheReferredContainedPatient(t *testing.T) {
	body := `{"resourceType":"Appointment","id":"a","status":"booked",
	  "contained":[
	    {"resourceType":"Location","id":"patient"},
	    {"resourceType":"Patient","id":"other","name":[{"family":"Wrong"}]},
	    {"resourceType":"Patient","id":"p","name":[{"use":"old","family":"Old"},{"use":"official","family":"Lee","given":["Kim","Soo"]}],
	     "birthDate":"1990-01-02T00:00:00Z","telecom":[{"system":"sms","value":"123"},{"system":"email","value":" k@x.org "}]}],
	  "participant":[{"actor":{"reference":"#p"},"status":"accepted"}]}`
	var ap appointment
	if err := json.Unmarshal([]byte(body), &ap); err != nil {
		t.Fatal(err)
	}
	got := toAppointment(ap, "s", discard()).Patient
	want := ehr.PatientContact{FirstName: "Kim Soo", LastName: "Lee", DateOfBirth: "1990-01-02", Email: "k@x.org", Phone: "123"}
	if got != want {
		t.Errorf("patient = %+v, want %+v", got, want)
	}
}

func fullAgent() ehr.Agent {
	return ehr.Agent{
		ID: "prac-1", FirstName: "Ana María", LastName: "López García", Name: "Dr. Ana María López García",
		Specialty: "Cardiology", Email: "ana.lopez@clinic.example", Timezone: "America/Argentina/Buenos_Aires",
		LocationIDs: []string{"loc-1", "loc-2.b"},
	}
}

func TestAgent_RoundTripsEveryField(t *testing.T) {
	for _, want := range []ehr.Agent{
		fullAgent(),
		{ID: "p2", FirstName: "Bo", LastName: "Ek", Name: "Bo Ek", Timezone: "UTC"},
	} {
		p, r := fhirAgent(want)
		rawP, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		rawR, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var p2 practitioner
		var r2 practitionerRole
		if err := json.Unmarshal(rawP, &p2); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(rawR, &r2); err != nil {
			t.Fatal(err)
		}
		log, buf := capture()
		got := toAgent(p2, []practitionerRole{r2}, log)
		if !reflect.DeepEqual(got.Agent, want) {
			t.Errorf("agent =\n%+v\nwant\n%+v\nFHIR %s %s", got.Agent, want, rawP, rawR)
		}
		if buf.Len() != 0 {
			t.Errorf("logged %s", buf)
		}
	}
}

func TestToAgent_ReadsRolesAndTimeZones(t *testing.T) {
	no := false
	p := practitioner{ID: "p", Name: []name{{Family: "Ek", Given: []string{"Bo"}}},
		Telecom: []telecom{{System: "phone", Value: "1"}, {System: "email", Value: "bo@x.org"}}}
	roles := []practitionerRole{
		{Active: &no, Specialty: []concept{{Text: "Retired"}}, Location: []reference{{Reference: "Location/old"}},
			Extension: []extension{{URL: TimezoneExtension, ValueCode: "Asia/Tokyo"}}},
		{Location: []reference{{Reference: "Location/l1"}, {Reference: "Organization/o"}, {Reference: "Location/l2"}}},
		{Specialty: []concept{{Coding: []coding{{Code: "394579002", Display: "Cardiology"}}}, {Text: "Sports medicine"}},
			Location:  []reference{{Reference: "Location/l1"}},
			Extension: []extension{{URL: TimezoneExtension, ValueCode: "Europe/Madrid"}}},
	}
	got := toAgent(p, roles, discard())
	want := agentRecord{
		Agent: ehr.Agent{ID: "p", FirstName: "Bo", LastName: "Ek", Name: "Bo Ek", Email: "bo@x.org",
			Specialty: "Cardiology", Timezone: "Europe/Madrid", LocationIDs: []string{"l1", "l2"}},
		specialties: []string{"Cardiology", "Sports medicine"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("agent = %+v, want %+v", got, want)
	}

	// The Practitioner's zone wins over a role's; a bad zone is UTC, logged.
	p.Extension = []extension{{URL: TimezoneExtension, ValueCode: "America/New_York"}}
	if got := toAgent(p, roles, discard()).Timezone; got != "America/New_York" {
		t.Errorf("timezone = %s", got)
	}
	for _, bad := range []string{"Mars/Olympus", "Local", "../../etc/passwd"} {
		log, buf := capture()
		p.Extension = []extension{{URL: TimezoneExtension, ValueCode: bad}}
		if got := toAgent(p, nil, log).Timezone; got != "UTC" {
			t.Errorf("timezone %q → %s, want UTC", bad, got)
		}
		if !strings.Contains(buf.String(), "unknown time zone") {
			t.Errorf("timezone %q not logged: %s", bad, buf)
		}
	}
	if got := toAgent(practitioner{ID: "q"}, nil, discard()); got.Timezone != "UTC" || got.Name != "" {
		t.Errorf("bare practitioner = %+v", got)
	}
}

func TestSplitReference(t *testing.T) {
	tests := []struct {
		ref, typ, id string
		ok           bool
	}{
		{"Practitioner/1", "Practitioner", "1", true},
		{" Location/a.b-c ", "Location", "a.b-c", true},
		{"https://x.example/fhir/Practitioner/9/_history/2", "Practitioner", "9", true},
		{"Practitioner/9/_history/2", "Practitioner", "9", true},
		{"#patient", "", "", false},
		{"Practitioner?identifier=x", "", "", false},
		{"Practitioner/", "", "", false},
		{"Practitioner/a b", "", "", false},
		{"urn:uuid:1234", "", "", false},
		{"practitioner/1", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		typ, id, ok := splitReference(tt.ref)
		if typ != tt.typ || id != tt.id || ok != tt.ok {
			t.Errorf("splitReference(%q) = %q, %q, %v", tt.ref, typ, id, ok)
		}
	}
	for id, want := range map[string]bool{"a": true, "A-1.b": true, strings.Repeat("x", 64): true,
		strings.Repeat("x", 65): false, "": false, "a/b": false, "a?b": false, "é": false, "a_b": false} {
		if validID(id) != want {
			t.Errorf("validID(%q) = %v", id, !want)
		}
	}
}

func TestPeriods_MergeSubtractClip(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2031, 1, 1, h, m, 0, 0, time.UTC) }
	p := func(h1, m1, h2, m2 int) ehr.Period { return ehr.Period{Start: at(h1, m1), End: at(h2, m2)} }
	free := ehr.MergePeriods([]ehr.Period{p(10, 0, 10, 30), p(9, 0, 9, 30), p(9, 30, 10, 0), p(13, 0, 14, 0), p(13, 15, 13, 45)})
	if want := []ehr.Period{p(9, 0, 10, 30), p(13, 0, 14, 0)}; !reflect.DeepEqual(free, want) {
		t.Fatalf("merged = %v, want %v", free, want)
	}
	busy := ehr.MergePeriods([]ehr.Period{p(8, 0, 9, 15), p(9, 45, 10, 0), p(12, 0, 13, 0), p(13, 30, 15, 0)})
	got := subtractPeriods(free, busy)
	if want := []ehr.Period{p(9, 15, 9, 45), p(10, 0, 10, 30), p(13, 0, 13, 30)}; !reflect.DeepEqual(got, want) {
		t.Errorf("subtracted = %v, want %v", got, want)
	}
	if got := subtractPeriods(free, []ehr.Period{p(0, 0, 23, 0)}); len(got) != 0 {
		t.Errorf("all busy = %v", got)
	}
	clipped := ehr.ClipPeriods(free, at(9, 10), at(13, 20))
	if want := []ehr.Period{p(9, 10, 10, 30), p(13, 0, 13, 20)}; !reflect.DeepEqual(clipped, want) {
		t.Errorf("clipped = %v, want %v", clipped, want)
	}
	if got := ehr.ClipPeriods(free, at(11, 0), at(12, 0)); got == nil || len(got) != 0 {
		t.Errorf("clipped to a gap = %#v, want empty", got)
	}
}

func TestPaginate(t *testing.T) {
	items := []int{1, 2, 3, 4, 5}
	tests := []struct {
		page, limit int
		want        []int
		wantPage    int
		wantLimit   int
	}{
		{1, 2, []int{1, 2}, 1, 2},
		{3, 2, []int{5}, 3, 2},
		{4, 2, []int{}, 4, 2},
		{0, 0, []int{1, 2, 3, 4, 5}, 1, ehr.DefaultLimit},
		{1, 1000, []int{1, 2, 3, 4, 5}, 1, ehr.MaxLimit},
		{1 << 62, 100, []int{}, 1 << 62, 100},
	}
	for _, tt := range tests {
		got := paginate(items, tt.page, tt.limit)
		if !reflect.DeepEqual(got.Items, tt.want) || got.TotalCount != 5 || got.Page != tt.wantPage || got.Limit != tt.wantLimit {
			t.Errorf("paginate(%d, %d) = %+v", tt.page, tt.limit, got)
		}
	}
}

func TestSearchTime(t *testing.T) {
	t0 := time.Date(2031, 1, 1, 9, 0, 0, 0, time.FixedZone("", 3600))
	if got := searchTime(t0, false); got != "2031-01-01T08:00:00Z" {
		t.Errorf("searchTime = %s", got)
	}
	half := t0.Add(500 * time.Millisecond)
	if got := searchTime(half, false); got != "2031-01-01T08:00:00Z" {
		t.Errorf("down = %s", got)
	}
	if got := searchTime(half, true); got != "2031-01-01T08:00:01Z" {
		t.Errorf("up = %s", got)
	}
	if got := searchTime(t0, true); got != "2031-01-01T08:00:00Z" {
		t.Errorf("up, whole second = %s", got)
	}
}
