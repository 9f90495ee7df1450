package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordsEHR is a fake FHIR server of one person (MRN recordsMRN) who has
// recordsPerEHR Observations there. After its delay it answers every
// Patient search naming that MRN (or none) with the person, and
// Observation?patient=<its id> with pages of _count (at most
// recordsPageMax) linked by next links; anything else is 404. Each entry
// is encoded once, so the fake's own CPU stays small.
type recordsEHR struct {
	srv     *httptest.Server
	delay   time.Duration
	patient string          // the person's id here
	person  []byte          // the Patient search Bundle
	entries [][]byte        // the Observation entries, encoded
	empty   json.RawMessage // a Bundle without entries

	mu    sync.Mutex
	spans []span // the requests answered since the last take
}

// span is when one request reached a fake EHR and when its answer was
// written.
type span struct{ in, out time.Time }

// take returns the spans since the last take and forgets them.
func (f *recordsEHR) take() []span {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.spans
	f.spans = nil
	return s
}

// recordsCodes are the LOINC laboratory codes the observations use.
var recordsCodes = []struct{ code, display, unit string }{
	{"2345-7", "Glucose", "mmol/L"}, {"4548-4", "Hemoglobin A1c", "%"}, {"2160-0", "Creatinine", "mg/dL"},
	{"2823-3", "Potassium", "mmol/L"}, {"2951-2", "Sodium", "mmol/L"}, {"2093-3", "Cholesterol", "mg/dL"},
}

// newRecordsEHR starts the fake EHR number sys (0, 1, 2) answering after
// delay. Its first recordsShared observations are those of every sys
// (same code, day and value: they merge); the rest are its own, spread
// over the same three years.
func newRecordsEHR(b *testing.B, sys int, delay time.Duration) *recordsEHR {
	f := &recordsEHR{delay: delay, patient: fmt.Sprintf("pat-%d", sys), empty: json.RawMessage(`{"resourceType":"Bundle","type":"searchset","total":0}`)}
	f.person, _ = json.Marshal(map[string]any{"resourceType": "Bundle", "type": "searchset", "total": 1,
		"entry": []any{map[string]any{"resource": recordsPatient(f.patient), "search": map[string]any{"mode": "match"}}}})
	start := time.Date(2022, 1, 3, 0, 0, 0, 0, time.UTC)
	for k := range recordsPerEHR {
		c, day, hour, v := recordsCodes[k%len(recordsCodes)], k*5, 8, 4+float64(k%40)/10
		if k >= recordsShared {
			c, day, hour, v = recordsCodes[(k+sys)%len(recordsCodes)], (k*37+sys*11)%1095, 9+sys, 3+float64((k*7+sys)%60)/10
		}
		effective := start.AddDate(0, 0, day).Add(time.Duration(hour)*time.Hour).Format("2006-01-02T15:04:05") + "-06:00"
		entry, _ := json.Marshal(map[string]any{"search": map[string]any{"mode": "match"},
			"resource": recordsObservation(fmt.Sprintf("obs-%d-%d", sys, k), f.patient, effective, c.code, c.display, strconv.FormatFloat(v, 'f', 1, 64), c.unit)})
		f.entries = append(f.entries, entry)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	b.Cleanup(func() { f.srv.CloseClientConnections(); f.srv.Close() })
	return f
}

func (f *recordsEHR) serve(w http.ResponseWriter, r *http.Request) {
	in := time.Now()
	defer func() {
		f.mu.Lock()
		f.spans = append(f.spans, span{in, time.Now()})
		f.mu.Unlock()
	}()
	time.Sleep(f.delay)
	q := r.URL.Query()
	var page []byte
	switch r.URL.Path {
	case "/fhir/Patient":
		page = f.person
		if id := q.Get("identifier"); id != "" && !strings.HasSuffix(id, recordsMRN) {
			page = f.empty
		}
	case "/fhir/Observation":
		page = f.observations(r.Host, q)
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/fhir+json")
	w.Write(page)
}

// observations is the page of the person's observations that q asks
// for (_count from _offset), with a next link while more remain; another
// patient has none. Date parameters are ignored, as a server may: the
// service filters by the day itself.
func (f *recordsEHR) observations(host string, q url.Values) []byte {
	if q.Get("patient") != f.patient && q.Get("patient") != "Patient/"+f.patient {
		return f.empty
	}
	count, err := strconv.Atoi(q.Get("_count"))
	if err != nil || count < 1 || count > recordsPageMax {
		count = recordsPageMax
	}
	offset, _ := strconv.Atoi(q.Get("_offset"))
	offset = min(max(offset, 0), len(f.entries))
	end := min(offset+count, len(f.entries))
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"resourceType":"Bundle","type":"searchset","total":%d`, len(f.entries))
	if end < len(f.entries) {
		next := url.Values{"patient": {f.patient}, "_count": {strconv.Itoa(count)}, "_offset": {strconv.Itoa(end)}}
		fmt.Fprintf(&buf, `,"link":[{"relation":"next","url":"http://%s/fhir/Observation?%s"}]`, host, next.Encode())
	}
	buf.WriteString(`,"entry":[`)
	buf.Write(bytes.Join(f.entries[offset:end], []byte(",")))
	buf.WriteString("]}")
	return buf.Bytes()
}

// recordsPatient is the person as a Patient of id, with the MRN.
func recordsPatient(id string) map[string]any {
	return map[string]any{
		"resourceType": "Patient", "id": id,
		"meta":      map[string]any{"lastUpdated": "2024-05-01T10:00:00Z"},
		"name":      []any{map[string]any{"use": "official", "family": "Benchmark", "given": []any{"Ana"}}},
		"birthDate": "1980-02-01", "gender": "female",
		"identifier": []any{map[string]any{"system": "urn:oid:2.16.840.1.113883.19.5", "value": recordsMRN,
			"type": map[string]any{"coding": []any{map[string]any{"system": "http://terminology.hl7.org/CodeSystem/v2-0203", "code": "MR"}}}}},
	}
}

// recordsObservation is a LOINC-coded laboratory Observation of patient
// with a quantity value.
func recordsObservation(id, patient, effective, code, display, value, unit string) map[string]any {
	return map[string]any{
		"resourceType": "Observation", "id": id, "status": "final",
		"meta":              map[string]any{"lastUpdated": "2024-05-01T10:00:00Z"},
		"category":          []any{map[string]any{"coding": []any{map[string]any{"system": "http://terminology.hl7.org/CodeSystem/observation-category", "code": "laboratory"}}}},
		"code":              map[string]any{"coding": []any{map[string]any{"system": "http://loinc.org", "code": code, "display": display}}, "text": display},
		"subject":           map[string]any{"reference": "Patient/" + patient},
		"effectiveDateTime": effective,
		"valueQuantity":     map[string]any{"value": json.Number(value), "unit": unit, "system": "http://unitsofmeasure.org", "code": unit},
	}
}

// recordsCeiling is the slowest EHR's full paging time read directly by a
// plain client, which searches the person and follows every Observation
// page, decoding each Bundle (its links, the entries kept raw); the
// median of recordsCeilingRuns after one run that opens the connection.
// decoded is the same with every resource decoded too (into a map), as a
// reference.
func recordsCeiling(b *testing.B, f *recordsEHR) (plain, decoded time.Duration) {
	c := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	median := func(full bool) time.Duration {
		var runs []time.Duration
		for i := range recordsCeilingRuns + 1 {
			t0 := time.Now()
			n, err := pageAll(c, f.srv.URL, full)
			d := time.Since(t0)
			if err != nil || n != recordsPerEHR {
				b.Fatalf("direct paging: %d observations, %v", n, err)
			}
			if i > 0 {
				runs = append(runs, d)
			}
		}
		slices.Sort(runs)
		return runs[len(runs)/2]
	}
	return median(false), median(true)
}

// pageAll searches the person at base and reads all their Observations
// as the service does (patient search, then _count=100 pages), returning
// how many it read; full decodes every resource.
func pageAll(c *http.Client, base string, full bool) (int, error) {
	var people fhirPage
	if err := getPage(c, base+"/fhir/Patient?identifier="+recordsMRN+"&_count=11", &people, true); err != nil {
		return 0, err
	}
	if len(people.ids) != 1 {
		return 0, fmt.Errorf("%d people", len(people.ids))
	}
	target := base + "/fhir/Observation?patient=" + people.ids[0] + "&_count=" + strconv.Itoa(recordsPageMax)
	n := 0
	for target != "" {
		var pg fhirPage
		if err := getPage(c, target, &pg, full); err != nil {
			return n, err
		}
		n += len(pg.Entry)
		target = ""
		for _, l := range pg.Link {
			if l.Relation == "next" {
				target = l.URL
			}
		}
	}
	return n, nil
}

// fhirPage is what pageAll reads of a search Bundle: its links, its
// entries raw and, when decoded in full, each resource's id.
type fhirPage struct {
	Link  []struct{ Relation, URL string }
	Entry []struct{ Resource json.RawMessage }
	ids   []string
}

// getPage GETs target into into; full decodes every resource (into a
// map) for its id.
func getPage(c *http.Client, target string, into *fhirPage, full bool) error {
	resp, err := c.Get(target)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %d %v", target, resp.StatusCode, err)
	}
	if err := json.Unmarshal(raw, into); err != nil || !full {
		return err
	}
	for _, e := range into.Entry {
		var res map[string]any
		if err := json.Unmarshal(e.Resource, &res); err != nil {
			return err
		}
		id, _ := res["id"].(string)
		into.ids = append(into.ids, id)
	}
	return nil
}
