package httpapi

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The contract's field names, pinned: the domain types carry no tags, so
// these are the DTOs' alone.
func TestDTO_PersonHasTheContractShape(t *testing.T) {
	full := ehr.Person{
		ID: "p1", Sources: []ehr.SourceRef{{Source: "clinic-a", PatientID: "123"}, {Source: "clinic-b", PatientID: "9"}},
		Name: ehr.HumanName{Family: "Lopez", Given: []string{"Ana", "María"}, Text: "Ana María Lopez"}, BirthDate: "1980-02-01", Gender: "female",
		Identifiers:     []ehr.Identifier{{System: "urn:mrn", Value: "77", Type: "MR"}},
		Telecom:         []ehr.ContactPoint{{System: "phone", Value: "555", Use: "mobile"}},
		Address:         []ehr.Address{{Line: []string{"1 Main St"}, City: "Austin", State: "TX", PostalCode: "78701", Country: "US"}},
		LastUpdated:     time.Date(2024, 5, 1, 10, 0, 0, 0, time.FixedZone("x", 3600)),
		Match:           &ehr.Match{Grade: ehr.Certain, Score: 0.999987654, Reasons: []string{"family", "given~", "birthDate", "phone"}},
		PossibleMatches: []ehr.PossibleMatch{{PersonID: "p7", Score: 0.8, Reasons: []string{"family", "given", "birthDate"}}},
	}
	for _, c := range []struct {
		name string
		in   ehr.Person
		want string
	}{
		{"full", full, `{"id":"p1","source":"clinic-a","sources":[{"source":"clinic-a","patientId":"123"},{"source":"clinic-b","patientId":"9"}],` +
			`"name":{"family":"Lopez","given":["Ana","María"],"text":"Ana María Lopez"},"birthDate":"1980-02-01","gender":"female",` +
			`"identifiers":[{"system":"urn:mrn","value":"77","type":"MR"}],"telecom":[{"system":"phone","value":"555","use":"mobile"}],` +
			`"address":[{"line":["1 Main St"],"city":"Austin","state":"TX","postalCode":"78701","country":"US"}],` +
			`"recordType":"patient","lastUpdated":"2024-05-01T09:00:00Z",` +
			`"match":{"grade":"certain","score":1,"reasons":["family","given~","birthDate","phone"]},` +
			`"possibleMatches":[{"personId":"p7","score":0.8,"reasons":["family","given","birthDate"]}]}`},
		{"empty slices", ehr.Person{ID: "p2", Sources: []ehr.SourceRef{}, Name: ehr.HumanName{Given: []string{}},
			Identifiers: []ehr.Identifier{}, Telecom: []ehr.ContactPoint{}, Address: []ehr.Address{{Line: []string{}}}},
			`{"id":"p2","source":"","sources":[],"name":{"family":"","given":[],"text":""},"birthDate":null,"gender":null,` +
				`"identifiers":[],"telecom":[],"address":[{"line":[],"city":"","state":"","postalCode":"","country":""}],"recordType":"patient","lastUpdated":null,"match":null,"possibleMatches":[]}`},
		{"nil slices", ehr.Person{ID: "p3", Address: []ehr.Address{{}}},
			`{"id":"p3","source":"","sources":null,"name":{"family":"","given":null,"text":""},"birthDate":null,"gender":null,` +
				`"identifiers":null,"telecom":null,"address":[{"line":null,"city":"","state":"","postalCode":"","country":""}],"recordType":"patient","lastUpdated":null,` +
				`"match":null,"possibleMatches":[]}`},
	} {
		if got := marshal(t, newPersonResponse(c.in)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestDTO_SourceErrorsHaveTheContractShape(t *testing.T) {
	m := searchMetadata{Sources: []string{}, Errors: newSourceErrors([]ehr.SourceError{{Source: "clinic-b", Code: "ehr_timeout", Message: "late"}})}
	if got, want := marshal(t, m), `{"searchTime":"","sources":[],"cacheHit":false,"errors":[{"source":"clinic-b","code":"ehr_timeout","message":"late"}]}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	for _, errs := range [][]ehr.SourceError{nil, {}} {
		if got, want := marshal(t, searchMetadata{Errors: newSourceErrors(errs)}), `{"searchTime":"","sources":null,"cacheHit":false}`; got != want {
			t.Errorf("%#v: got %s\nwant %s", errs, got, want)
		}
	}
}

func TestDTO_AppointmentPatientHasTheContractShape(t *testing.T) {
	got := marshal(t, newAppointmentResponse(ehr.Appointment{ID: "a-1", Patient: ehr.PatientContact{
		FirstName: "Ana", LastName: "Lopez", DateOfBirth: "1980-02-01", Email: "ana@example.com", Phone: "555"}}))
	want := `{"id":"a-1","agentId":"","start":"0001-01-01T00:00:00Z","end":"0001-01-01T00:00:00Z","status":"","reason":"","locationId":null,` +
		`"patient":{"firstName":"Ana","lastName":"Lopez","dateOfBirth":"1980-02-01","email":"ana@example.com","phone":"555"},` +
		`"source":"","externalId":"","createdAt":null,"updatedAt":null}`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestDTO_BookingRequestReadsThePatient(t *testing.T) {
	var req bookingRequest
	err := unmarshalStrict([]byte(`{"patient":{"firstName":"Ana","lastName":"Lopez","dateOfBirth":"1980-02-01","email":"a@x.org","phone":"555"}}`), &req)
	want := ehr.PatientContact{FirstName: "Ana", LastName: "Lopez", DateOfBirth: "1980-02-01", Email: "a@x.org", Phone: "555"}
	if err != nil || req.Patient.contact() != want {
		t.Fatalf("got %+v, %v", req.Patient.contact(), err)
	}
	for body, msg := range map[string]string{
		`{"patient":{"firstName":1}}`:   "patient.firstName must be a string, not number",
		`{"patient":{"middleName":""}}`: `Unknown field "middleName"`,
	} {
		err := unmarshalStrict([]byte(body), &bookingRequest{})
		var e *core.Error
		if !errors.As(err, &e) || e.Message != msg {
			t.Errorf("%s: %v; want %q", body, err, msg)
		}
	}
}
