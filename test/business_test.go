package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"strings"
	"sync"
	"testing"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core/business"
)

// admin is the business core as the admin CLI uses it.
func (w *world) admin() *business.Service {
	w.t.Helper()
	db, err := postgres.New(context.Background(), w.dbURL)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(db.Close)
	return app.NewBusinessWithoutLogos(db)
}

func (w *world) createBusiness(owner string) string {
	w.t.Helper()
	b, err := w.admin().CreateBusiness(context.Background(), "Clinic of "+owner, owner+"@example.com", owner)
	if err != nil {
		w.t.Fatal(err)
	}
	return b.ID
}

// bdo is a business request: a bearer token and user-type business.
func (s *server) bdo(method, path, token string, body any) response {
	s.t.Helper()
	var r io.Reader
	ct := "application/json"
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case form:
		r, ct = b.body, b.ct
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	return s.do(method, path, token, r, "user-type", "business", "Content-Type", ct)
}

// data checks the success envelope with message and returns its data.
func (r response) data(t *testing.T, status int, message string) any {
	t.Helper()
	var env struct {
		Message string `json:"message"`
		Status  string `json:"status"`
		Data    any    `json:"data"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || r.status != status || env.Status != "success" || env.Message != message {
		t.Fatalf("want %d %q, got %d %s", status, message, r.status, r.body)
	}
	return env.Data
}

type form struct {
	body io.Reader
	ct   string
}

// locationForm builds a location form: groups as JSON parts (or flat
// fields when flat), then an optional logo.
func locationForm(t *testing.T, flat bool, general, address map[string]string, logo []byte, logoName, logoType string) form {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for group, fields := range map[string]map[string]string{"generalInfo": general, "address": address} {
		if fields == nil {
			continue
		}
		if flat {
			for k, v := range fields {
				mw.WriteField(group+"["+k+"]", v)
			}
			continue
		}
		raw, _ := json.Marshal(fields)
		mw.WriteField(group, string(raw))
	}
	if logo != nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="logo"; filename=%q`, logoName))
		h.Set("Content-Type", logoType)
		p, _ := mw.CreatePart(h)
		p.Write(logo)
	}
	mw.Close()
	return form{&buf, mw.FormDataContentType()}
}

var (
	pngLogo  = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1, 2, 3}, 2000)...)
	general  = map[string]string{"name": "Main Clinic", "timezone": "America/Chicago", "phone": "+1 512 555 0100", "email": "main@clinic.example", "npi": "1234567893", "taxId": "12-3456789", "adminName": "Dr. Jane A. Smith, MD", "website": "https://clinic.example"}
	address  = map[string]string{"address": "1 Congress Ave", "city": "Austin", "state": "tx", "zipCode": "78701", "country": "US", "suite": "100"}
	otherTok = func(w *world) string { return w.token("mallory") }
)

func (w *world) count(table string) int {
	w.t.Helper()
	var n int
	if err := w.db.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

func TestBusiness_ReadAndEdit(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	id := w.createBusiness("owner")
	tok := w.token("owner")

	d := s.bdo("GET", "/business/"+id, tok, nil).data(t, 200, "Business Information fetched successfully").(map[string]any)
	if d["id"] != id || d["name"] != "Clinic of owner" || d["email"] != "owner@example.com" || d["city"] != nil {
		t.Fatalf("business %v", d)
	}
	edit := map[string]string{"name": "Austin Family Care", "npiLicense": "1234567893", "taxId": "12-3456789", "website": "https://afc.example",
		"address": "1 Main St", "city": "Austin", "state": "TX", "zipCode": "78701-1234", "twitterLink": "https://x.com/afc", "description": "Family practice"}
	d = s.bdo("PATCH", "/business/"+id, tok, edit).data(t, 200, "Business updated successfully").(map[string]any)
	if d["id"] != id || d["name"] != "Austin Family Care" || len(d) != 2 {
		t.Fatalf("edit answer %v", d)
	}
	d = s.bdo("GET", "/business/"+id, tok, nil).data(t, 200, "Business Information fetched successfully").(map[string]any)
	if d["zipCode"] != "78701-1234" || d["email"] != "owner@example.com" || d["twitterLink"] != "https://x.com/afc" {
		t.Fatalf("after edit %v", d)
	}

	r := s.bdo("PATCH", "/business/"+id, tok, map[string]string{"email": "not-mail", "npiLicense": "1234567890", "taxId": "123456789", "zipCode": "7870", "state": "Texas", "website": "ftp://x", "name": ""})
	if r.status != 400 || r.errorCode(t) != "validation_failed" {
		t.Fatalf("bad edit: %d %s", r.status, r.body)
	}
	msg := r.json(t)["message"].(string)
	for _, f := range []string{"email", "npiLicense", "taxId", "zipCode", "state", "website", "name"} {
		if !strings.Contains(msg, f) {
			t.Errorf("message %q does not name %s", msg, f)
		}
	}
	if d := s.bdo("GET", "/business/"+id, tok, nil).data(t, 200, "Business Information fetched successfully").(map[string]any); d["name"] != "Austin Family Care" {
		t.Fatal("a refused edit changed the business")
	}
	for what, r := range map[string]response{
		"unknown field":    s.bdo("PATCH", "/business/"+id, tok, `{"owner":"me"}`),
		"duplicate key":    s.bdo("PATCH", "/business/"+id, tok, `{"name":"a","name":"b"}`),
		"wrong type":       s.bdo("PATCH", "/business/"+id, tok, `{"name":1}`),
		"trailing data":    s.bdo("PATCH", "/business/"+id, tok, `{"name":"a"}x`),
		"business id uuid": s.bdo("GET", "/business/42", tok, nil),
	} {
		if r.status != 400 {
			t.Errorf("%s: %d %s", what, r.status, r.body)
		}
	}
	if r := s.do("GET", "/business/"+id, tok, nil); r.status != 403 || r.errorCode(t) != "forbidden_user_type" {
		t.Errorf("without user-type: %d", r.status)
	}
	if r := s.bdo("GET", "/business/"+id, "", nil); r.status != 401 {
		t.Errorf("without token: %d", r.status)
	}
}

func TestLocation_CreateListUpdateWithLogo(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	id := w.createBusiness("owner")
	tok := w.token("owner")

	d := s.bdo("POST", "/business/location/"+id+"/", tok, locationForm(t, false, general, address, pngLogo, "logo.png", "image/png")).
		data(t, 201, "Complete business location created successfully").(map[string]any)
	loc := int64(d["locationId"].(float64))
	if d["isComplete"] != true || d["logoBlobId"] == nil {
		t.Fatalf("create answer %v", d)
	}
	logo := int64(d["logoBlobId"].(float64))
	meta := s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", logo), tok, nil).json(t)
	if meta["containerName"] != "images" || meta["businessLocationId"] != fmt.Sprint(loc) || meta["contentType"] != "image/png" {
		t.Fatalf("logo blob %v", meta)
	}
	if r := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", logo), tok, nil); !bytes.Equal(r.body, pngLogo) {
		t.Fatal("logo bytes differ")
	}

	list := s.bdo("GET", "/business/locations/"+id, tok, nil).data(t, 200, "Business locations fetched successfully").([]any)
	l := list[0].(map[string]any)
	if len(list) != 1 || l["id"] != float64(loc) || l["name"] != "Main Clinic" || l["address"] != "1 Congress Ave" || l["city"] != "Austin" ||
		l["state"] != "TX" || l["adminFirstName"] != "Jane" || l["adminLastName"] != "Smith" || l["isComplete"] != true {
		t.Fatalf("location %v", l)
	}

	// Flat fields, and a new logo replaces the old one.
	d = s.bdo("PUT", fmt.Sprintf("/business/location/%d/update", loc), tok,
		locationForm(t, true, map[string]string{"name": "Downtown Clinic", "adminName": "Smith, John"}, map[string]string{"city": "Round Rock"}, pngLogo[:100], "new.png", "image/png")).
		data(t, 200, "Business location updated successfully").(map[string]any)
	if d["id"] != float64(loc) || d["name"] != "Downtown Clinic" {
		t.Fatalf("update answer %v", d)
	}
	if r := s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", logo), tok, nil); r.status != 404 {
		t.Fatalf("old logo still there: %d", r.status)
	}
	l = s.bdo("GET", "/business/locations/"+id, tok, nil).data(t, 200, "Business locations fetched successfully").([]any)[0].(map[string]any)
	if l["city"] != "Round Rock" || l["address"] != "1 Congress Ave" || l["adminFirstName"] != "John" || l["logoBlobId"] == float64(logo) || l["logoBlobId"] == nil {
		t.Fatalf("after update %v", l)
	}
	if w.objects() != 1 || w.rows() != 1 {
		t.Fatalf("%d objects and %d blob rows; want the one current logo", w.objects(), w.rows())
	}
}

func TestLocation_FailedCreateLeavesNothing(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	id := w.createBusiness("owner")
	tok := w.token("owner")
	bad := map[string]form{
		"bad timezone":          locationForm(t, false, map[string]string{"name": "X", "timezone": "Mars/Base"}, nil, pngLogo, "l.png", "image/png"),
		"no name":               locationForm(t, false, map[string]string{"timezone": "UTC"}, nil, pngLogo, "l.png", "image/png"),
		"bad zip and phone":     locationForm(t, true, map[string]string{"name": "X", "phone": "call me"}, map[string]string{"zipCode": "ABCDE"}, nil, "", ""),
		"logo not an image":     locationForm(t, false, map[string]string{"name": "X"}, nil, []byte("%PDF-1.4"), "l.pdf", "application/pdf"),
		"logo bytes not a png":  locationForm(t, false, map[string]string{"name": "X"}, nil, []byte("%PDF-1.4"), "l.png", "image/png"),
		"unknown address field": locationForm(t, false, map[string]string{"name": "X"}, map[string]string{"planet": "Mars"}, nil, "", ""),
	}
	for what, f := range bad {
		if r := s.bdo("POST", "/business/location/"+id+"/", tok, f); r.status != 400 || r.errorCode(t) == "" {
			t.Errorf("%s: %d %s", what, r.status, r.body)
		}
	}
	if r := s.bdo("POST", "/business/location/"+id+"/", tok, "{}"); r.status != 415 {
		t.Errorf("JSON body: %d", r.status)
	}
	if w.count("business_locations") != 0 || w.rows() != 0 || w.objects() != 0 {
		t.Fatalf("left %d locations, %d blob rows, %d objects", w.count("business_locations"), w.rows(), w.objects())
	}
}

func TestProviders_ListedForTheirLocation(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	id := w.createBusiness("owner")
	tok := w.token("owner")
	loc := int64(s.bdo("POST", "/business/location/"+id+"/", tok, locationForm(t, false, map[string]string{"name": "Main"}, nil, nil, "", "")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"].(float64))
	admin := w.admin()
	for _, p := range []business.Provider{
		{FirstName: "Zoe", LastName: "Adams", Email: "zoe@clinic.example", TelehealthLink: "https://meet.example/zoe"},
		{FirstName: "Al", LastName: "Baker", Email: "al@clinic.example"},
	} {
		if _, err := admin.CreateProvider(context.Background(), p, loc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CreateProvider(context.Background(), business.Provider{FirstName: "N", LastName: "O", Email: "n@o.example"}, loc+100); err == nil {
		t.Fatal("provider created for a missing location")
	}
	d := s.bdo("GET", fmt.Sprintf("/business/location/%d/providers", loc), tok, nil).data(t, 200, "Providers fetched successfully").(map[string]any)
	ps := d["providers"].([]any)
	if len(ps) != 2 || ps[0].(map[string]any)["lastName"] != "Adams" || ps[0].(map[string]any)["telehealthLink"] != "https://meet.example/zoe" || ps[1].(map[string]any)["telehealthLink"] != nil {
		t.Fatalf("providers %v", ps)
	}
}

func TestHours_RulesAndErrors(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	id := w.createBusiness("owner")
	tok := w.token("owner")
	loc := int64(s.bdo("POST", "/business/location/"+id+"/", tok, locationForm(t, false, map[string]string{"name": "Main"}, nil, nil, "", "")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"].(float64))
	add := func(days ...string) response {
		var hs []map[string]string
		for _, d := range days {
			hs = append(hs, map[string]string{"day": d, "start_time": "09:00", "end_time": "17:00"})
		}
		return s.bdo("POST", "/business/operating-hours/add", tok, map[string]any{"businessLocationId": loc, "operatingHours": hs})
	}

	d := add("sunday", "MONDAY", "Wednesday").data(t, 201, "Operating hours added successfully").(map[string]any)
	if d["businessLocationId"] != float64(loc) || d["addedCount"] != 3.0 || len(d["operatingHours"].([]any)) != 3 {
		t.Fatalf("add answer %v", d)
	}
	list := s.bdo("GET", fmt.Sprintf("/business/location/%d/operating-hours", loc), tok, nil).data(t, 200, "Operating hours fetched successfully").([]any)
	var days []string
	for _, e := range list {
		days = append(days, e.(map[string]any)["day"].(string))
	}
	if strings.Join(days, ",") != "Monday,Wednesday,Sunday" || list[0].(map[string]any)["start_time"] != "09:00" {
		t.Fatalf("list %v", list)
	}
	monday := int64(list[0].(map[string]any)["id"].(float64))

	for what, c := range map[string]struct {
		r      response
		status int
		code   string
		names  string
	}{
		"a day the location has":        {add("Tuesday", "Monday"), 409, "duplicate_day", "Monday"},
		"a day twice in the request":    {add("Friday", "friday"), 409, "duplicate_day", "Friday"},
		"end before start":              {s.bdo("POST", "/business/operating-hours/add", tok, fmt.Sprintf(`{"businessLocationId":%d,"operatingHours":[{"day":"Friday","start_time":"17:00","end_time":"09:00"}]}`, loc)), 400, "validation_failed", "end_time"},
		"not a time":                    {s.bdo("POST", "/business/operating-hours/add", tok, fmt.Sprintf(`{"businessLocationId":%d,"operatingHours":[{"day":"Friday","start_time":"9am","end_time":"17:00"}]}`, loc)), 400, "validation_failed", "start_time"},
		"not a day":                     {add("Funday"), 400, "validation_failed", "day"},
		"location missing":              {s.bdo("POST", "/business/operating-hours/add", tok, `{"businessLocationId":999999,"operatingHours":[{"day":"Friday","start_time":"09:00","end_time":"10:00"}]}`), 404, "location_not_found", "not found"},
		"update to another entry's day": {s.bdo("PUT", "/business/operating-hours/update", tok, map[string]any{"id": monday, "day": "Sunday", "start_time": "10:00", "end_time": "11:00"}), 409, "day_conflict", "Sunday"},
		"update a missing entry":        {s.bdo("PUT", "/business/operating-hours/update", tok, map[string]any{"id": 999999, "day": "Sunday", "start_time": "10:00", "end_time": "11:00"}), 404, "operating_hours_not_found", "999999"},
		"delete a missing entry":        {s.bdo("DELETE", "/business/operating-hours/delete", tok, `{"id":999999}`), 404, "operating_hours_not_found", "999999"},
	} {
		if code := c.r.errorCode(t); c.r.status != c.status || code != c.code || !strings.Contains(string(c.r.body), c.names) {
			t.Errorf("%s: got %d %s, want %d %s naming %q", what, c.r.status, c.r.body, c.status, c.code, c.names)
		}
	}
	if n := w.count("operating_hours"); n != 3 {
		t.Fatalf("refused adds changed the hours: %d entries", n)
	}

	d = s.bdo("PUT", "/business/operating-hours/update", tok, map[string]any{"id": monday, "day": "tuesday", "start_time": "08:30", "end_time": "12:15"}).
		data(t, 200, "Operating hours updated successfully").(map[string]any)
	if d["id"] != float64(monday) || d["day"] != "Tuesday" || d["start_time"] != "08:30" || d["end_time"] != "12:15" {
		t.Fatalf("update answer %v", d)
	}
	d = s.bdo("DELETE", "/business/operating-hours/delete", tok, map[string]any{"id": monday}).data(t, 200, "Operating hours deleted successfully").(map[string]any)
	if d["id"] != float64(monday) {
		t.Fatalf("delete answer %v", d)
	}
	if r := s.bdo("DELETE", "/business/operating-hours/delete", tok, map[string]any{"id": monday}); r.status != 404 {
		t.Fatalf("second delete: %d", r.status)
	}
}

func TestHours_OneEntryPerDayUnderConcurrentAdds(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	id := w.createBusiness("owner")
	tok := w.token("owner")
	loc := int64(s.bdo("POST", "/business/location/"+id+"/", tok, locationForm(t, false, map[string]string{"name": "Main"}, nil, nil, "", "")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"].(float64))
	body := fmt.Sprintf(`{"businessLocationId":%d,"operatingHours":[{"day":"Thursday","start_time":"09:00","end_time":"17:00"}]}`, loc)

	const n = 12
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = s.bdo("POST", "/business/operating-hours/add", tok, body).status
		}()
	}
	wg.Wait()
	created, conflicts := 0, 0
	for _, st := range statuses {
		switch st {
		case 201:
			created++
		case 409:
			conflicts++
		}
	}
	if created != 1 || conflicts != n-1 || w.count("operating_hours") != 1 {
		t.Fatalf("statuses %v, %d rows; want one 201 and the rest 409", statuses, w.count("operating_hours"))
	}
}

func TestBusiness_OthersGet404OnEveryEndpoint(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	id := w.createBusiness("owner")
	w.createBusiness("mallory") // mallory owns a business too, just not this one
	tok, mal := w.token("owner"), otherTok(w)
	loc := int64(s.bdo("POST", "/business/location/"+id+"/", tok, locationForm(t, false, map[string]string{"name": "Main"}, nil, pngLogo, "l.png", "image/png")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"].(float64))
	hours := s.bdo("POST", "/business/operating-hours/add", tok, map[string]any{"businessLocationId": loc, "operatingHours": []map[string]string{{"day": "Monday", "start_time": "09:00", "end_time": "10:00"}}}).
		data(t, 201, "Operating hours added successfully").(map[string]any)
	entry := int64(hours["operatingHours"].([]any)[0].(map[string]any)["id"].(float64))
	logo := s.bdo("GET", "/business/locations/"+id, tok, nil).data(t, 200, "Business locations fetched successfully").([]any)[0].(map[string]any)["logoBlobId"]

	for what, r := range map[string]response{
		"GET business":   s.bdo("GET", "/business/"+id, mal, nil),
		"PATCH business": s.bdo("PATCH", "/business/"+id, mal, `{"name":"mine now"}`),
		"GET locations":  s.bdo("GET", "/business/locations/"+id, mal, nil),
		"POST location":  s.bdo("POST", "/business/location/"+id+"/", mal, locationForm(t, false, map[string]string{"name": "X"}, nil, nil, "", "")),
		"PUT location":   s.bdo("PUT", fmt.Sprintf("/business/location/%d/update", loc), mal, locationForm(t, false, map[string]string{"name": "X"}, nil, nil, "", "")),
		"GET providers":  s.bdo("GET", fmt.Sprintf("/business/location/%d/providers", loc), mal, nil),
		"GET hours":      s.bdo("GET", fmt.Sprintf("/business/location/%d/operating-hours", loc), mal, nil),
		"add hours":      s.bdo("POST", "/business/operating-hours/add", mal, map[string]any{"businessLocationId": loc, "operatingHours": []map[string]string{{"day": "Friday", "start_time": "09:00", "end_time": "10:00"}}}),
		"update hours":   s.bdo("PUT", "/business/operating-hours/update", mal, map[string]any{"id": entry, "day": "Friday", "start_time": "09:00", "end_time": "10:00"}),
		"delete hours":   s.bdo("DELETE", "/business/operating-hours/delete", mal, map[string]any{"id": entry}),
		"logo metadata":  s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%v", logo), mal, nil),
		"logo download":  s.do("GET", fmt.Sprintf("/cloud-blob/download/%v", logo), mal, nil),
	} {
		if r.status != 404 {
			t.Errorf("%s: %d %s", what, r.status, r.body)
		}
	}
	if w.count("operating_hours") != 1 || w.count("business_locations") != 1 {
		t.Fatal("a refused request changed data")
	}
}
