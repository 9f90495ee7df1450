package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
)

const bizID = "3f1c1b7e-0000-4000-8000-000000000001"

func newBusinessServer(t *testing.T, b *BusinessMock) *Server {
	t.Helper()
	return New(Config{
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		Auth:           tokens{},
		Storage:        &StorageMock{},
		Business:       b,
		Registry:       prometheus.NewRegistry(),
		Ready:          func(context.Context) error { return nil },
		MaxUploadBytes: 1 << 20,
	})
}

// biz sends a business request: bearer token of alice and user-type business.
func biz(t *testing.T, s http.Handler, method, path string, body io.Reader, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	return do(t, s, method, path, body, append([]string{"user-type", "business", "Content-Type", "application/json"}, header...)...)
}

func success(t *testing.T, w *httptest.ResponseRecorder, status int, message string) map[string]any {
	t.Helper()
	var env struct {
		Message string         `json:"message"`
		Status  string         `json:"status"`
		Data    map[string]any `json:"data"`
	}
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Status != "success" || env.Message != message {
		t.Fatalf("not the success envelope %q: %s", message, w.Body)
	}
	return env.Data
}

func TestBusiness_NeedsUserTypeBusiness(t *testing.T) {
	m := &BusinessMock{BusinessFunc: func(context.Context, string) (business.Business, error) {
		return business.Business{ID: bizID, Name: "Clinic"}, nil
	}}
	s := newBusinessServer(t, m)
	for _, ut := range []string{"", "patient", "businesses"} {
		w := do(t, s, "GET", "/business/"+bizID, nil, "user-type", ut)
		if e := errEnvelope(t, w); w.Code != 403 || e.Code != "forbidden_user_type" {
			t.Errorf("user-type %q: %d %s", ut, w.Code, e.Code)
		}
	}
	if w := do(t, s, "GET", "/business/"+bizID, nil, "user-type", "BUSINESS"); w.Code != 200 {
		t.Errorf("user-type BUSINESS: %d", w.Code)
	}
	// Authentication comes first: no token is 401 even without user-type.
	if w := do(t, s, "GET", "/business/"+bizID, nil, "Authorization", ""); w.Code != 401 {
		t.Errorf("no token: %d", w.Code)
	}
	if len(m.BusinessCalls()) != 1 {
		t.Fatalf("core called %d times", len(m.BusinessCalls()))
	}
}

func TestBusiness_GetAnswersTheEnvelope(t *testing.T) {
	m := &BusinessMock{BusinessFunc: func(_ context.Context, id string) (business.Business, error) {
		return business.Business{ID: id, Name: "Clinic", Email: "c@example.com", City: "Austin", CreatedAt: time.Unix(0, 0)}, nil
	}}
	data := success(t, biz(t, newBusinessServer(t, m), "GET", "/business/"+bizID, nil), 200, "Business Information fetched successfully")
	if data["id"] != bizID || data["name"] != "Clinic" || data["city"] != "Austin" || data["address"] != nil {
		t.Fatalf("data %v", data)
	}
}

func TestEditBusiness_StrictJSON(t *testing.T) {
	var got business.BusinessEdit
	m := &BusinessMock{EditBusinessFunc: func(_ context.Context, id string, e business.BusinessEdit) (business.Business, error) {
		got = e
		return business.Business{ID: id, Name: "New"}, nil
	}}
	s := newBusinessServer(t, m)
	data := success(t, biz(t, s, "PATCH", "/business/"+bizID, strings.NewReader(`{"name":"New","city":""}`)), 200, "Business updated successfully")
	if data["id"] != bizID || data["name"] != "New" || got.Name == nil || *got.Name != "New" || got.City == nil || *got.City != "" || got.Email != nil {
		t.Fatalf("data %v, edit %+v", data, got)
	}
	bad := []struct {
		name, body, ct string
		status         int
		code, mention  string
	}{
		{"unknown field", `{"nmae":"x"}`, "", 400, "invalid_json", "nmae"},
		{"duplicate key", `{"name":"a","name":"b"}`, "", 400, "invalid_json", "Duplicate key name"},
		{"trailing data", `{"name":"a"} {}`, "", 400, "invalid_json", "exactly one"},
		{"wrong type", `{"name":5}`, "", 400, "invalid_json", "name must be a string"},
		{"not an object", `["name"]`, "", 400, "invalid_json", "object"},
		{"empty body", ``, "", 400, "invalid_json", "empty"},
		{"syntax error", `{"name":`, "", 400, "invalid_json", ""},
		{"form instead of JSON", `name=x`, "application/x-www-form-urlencoded", 415, "unsupported_media_type", ""},
		{"larger than 1 MiB", `{"description":"` + strings.Repeat("x", 1<<20) + `"}`, "", 413, "body_too_large", ""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var header []string
			if tt.ct != "" {
				header = []string{"Content-Type", tt.ct}
			}
			w := biz(t, s, "PATCH", "/business/"+bizID, strings.NewReader(tt.body), header...)
			e := errEnvelope(t, w)
			if w.Code != tt.status || e.Code != tt.code || !strings.Contains(e.Message, tt.mention) {
				t.Fatalf("got %d %s %q", w.Code, e.Code, e.Message)
			}
		})
	}
	if len(m.EditBusinessCalls()) != 1 {
		t.Fatalf("bad requests reached the core: %d calls", len(m.EditBusinessCalls()))
	}
}

type formPart struct {
	name, value, filename, ct string
}

func locationForm(t *testing.T, parts ...formPart) (io.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := `form-data; name="` + p.name + `"`
		if p.filename != "" {
			cd += `; filename="` + p.filename + `"`
		}
		h.Set("Content-Disposition", cd)
		if p.ct != "" {
			h.Set("Content-Type", p.ct)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, p.value)
	}
	mw.Close()
	return &buf, mw.FormDataContentType()
}

func TestCreateLocation_AcceptsJSONGroupsAndFlatFieldsAlike(t *testing.T) {
	var inputs []business.LocationInput
	var logos []*business.Logo
	m := &BusinessMock{CreateLocationFunc: func(_ context.Context, id string, in business.LocationInput, logo *business.Logo) (business.Location, error) {
		inputs, logos = append(inputs, in), append(logos, logo)
		return business.Location{ID: 12, Name: *in.Name}, nil
	}, AuthorizeLocationCreateFunc: func(context.Context, string) error { return nil }}
	s := newBusinessServer(t, m)
	png := "\x89PNG\r\n\x1a\nrest"
	forms := [][]formPart{
		{{name: "generalInfo", value: `{"name":"Main","timezone":"America/Chicago","adminName":"Dr. Jane Smith"}`},
			{name: "address", value: `{"city":"Austin","zipCode":"78701"}`},
			{name: "logo", value: png, filename: "logo.png", ct: "image/png"}},
		{{name: "generalInfo[name]", value: "Main"}, {name: "generalInfo[timezone]", value: "America/Chicago"},
			{name: "generalInfo[adminName]", value: "Dr. Jane Smith"}, {name: "address[city]", value: "Austin"},
			{name: "address[zipCode]", value: "78701"},
			{name: "logo", value: png, filename: `C:\pics\logo.png`, ct: "application/octet-stream"}},
	}
	for _, f := range forms {
		body, ct := locationForm(t, f...)
		data := success(t, biz(t, s, "POST", "/business/location/"+bizID+"/", body, "Content-Type", ct), 201, "Complete business location created successfully")
		if data["locationId"] != 12.0 || data["isComplete"] != false || data["logoBlobId"] != nil {
			t.Fatalf("data %v", data)
		}
	}
	for i, in := range inputs {
		if *in.Name != "Main" || *in.Timezone != "America/Chicago" || *in.AdminName != "Dr. Jane Smith" || *in.City != "Austin" || *in.ZipCode != "78701" || in.Phone != nil {
			t.Fatalf("form %d gave %+v", i, in)
		}
		if l := logos[i]; l == nil || l.Filename != "logo.png" || l.ContentType != "image/png" || l.Size != int64(len(png)) || string(l.Body) != png {
			t.Fatalf("form %d logo %+v", i, l)
		}
	}
	// Without the trailing slash too, and an empty file input is no logo.
	body, ct := locationForm(t, formPart{name: "generalInfo[name]", value: "B"}, formPart{name: "logo", value: ""})
	success(t, biz(t, s, "POST", "/business/location/"+bizID, body, "Content-Type", ct), 201, "Complete business location created successfully")
	if logos[2] != nil {
		t.Fatal("an empty logo part became a logo")
	}
}

func TestLocationForm_RefusesBadForms(t *testing.T) {
	m := &BusinessMock{UpdateLocationFunc: func(context.Context, int64, business.LocationInput, *business.Logo) (business.Location, error) {
		return business.Location{ID: 3, Name: "x"}, nil
	}, AuthorizeLocationUpdateFunc: func(context.Context, int64) error { return nil }}
	s := newBusinessServer(t, m)
	tests := []struct {
		name   string
		parts  []formPart
		status int
		code   string
	}{
		{"unknown group field", []formPart{{name: "generalInfo", value: `{"nickname":"x"}`}}, 400, "unknown_field"},
		{"unknown flat field", []formPart{{name: "address[planet]", value: "Mars"}}, 400, "unknown_field"},
		{"unknown part", []formPart{{name: "owner", value: "me"}}, 400, "unknown_field"},
		{"field in both forms", []formPart{{name: "generalInfo[name]", value: "a"}, {name: "generalInfo", value: `{"name":"b"}`}}, 400, "duplicate_field"},
		{"group not JSON", []formPart{{name: "address", value: `city=Austin`}}, 400, "invalid_json"},
		{"group value not a string", []formPart{{name: "address", value: `{"zipCode":78701}`}}, 400, "invalid_json"},
		{"two logos", []formPart{{name: "logo", value: "a", filename: "a.png"}, {name: "logo", value: "b", filename: "b.png"}}, 400, "duplicate_field"},
		{"logo too large", []formPart{{name: "logo", value: strings.Repeat("x", business.MaxLogoBytes+1), filename: "a.png"}}, 413, "logo_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, ct := locationForm(t, tt.parts...)
			w := biz(t, s, "PUT", "/business/location/3/update", body, "Content-Type", ct)
			if e := errEnvelope(t, w); w.Code != tt.status || e.Code != tt.code {
				t.Fatalf("got %d %s (%s)", w.Code, e.Code, e.Message)
			}
		})
	}
	if w := biz(t, s, "PUT", "/business/location/3/update", strings.NewReader(`{}`)); w.Code != 415 {
		t.Fatalf("JSON body: %d", w.Code)
	}
	if w := biz(t, s, "PUT", "/business/location/abc/update", strings.NewReader("")); w.Code != 400 {
		t.Fatalf("non-numeric id: %d", w.Code)
	}
	if len(m.UpdateLocationCalls()) != 0 {
		t.Fatal("a bad form reached the core")
	}
}

func TestHours_RequestsAndAnswers(t *testing.T) {
	var added []business.HoursInput
	m := &BusinessMock{
		AddHoursFunc: func(_ context.Context, loc int64, in []business.HoursInput) ([]business.Hours, error) {
			added = in
			return []business.Hours{{ID: 1, LocationID: loc, Day: time.Monday, Start: "09:00", End: "17:00"}}, nil
		},
		UpdateHoursFunc: func(_ context.Context, id int64, in business.HoursInput) (business.Hours, error) {
			return business.Hours{ID: id, LocationID: 4, Day: time.Tuesday, Start: in.Start, End: in.End}, nil
		},
		DeleteHoursFunc: func(context.Context, int64) error { return nil },
		HoursFunc: func(context.Context, int64) ([]business.Hours, error) {
			return []business.Hours{{ID: 1, LocationID: 4, Day: time.Sunday, Start: "10:00", End: "12:00"}}, nil
		},
	}
	s := newBusinessServer(t, m)
	data := success(t, biz(t, s, "POST", "/business/operating-hours/add", strings.NewReader(`{"businessLocationId":4,"operatingHours":[{"day":"monday","start_time":"09:00","end_time":"17:00"}]}`)), 201, "Operating hours added successfully")
	entries := data["operatingHours"].([]any)
	if data["businessLocationId"] != 4.0 || data["addedCount"] != 1.0 || len(entries) != 1 || entries[0].(map[string]any)["day"] != "Monday" || entries[0].(map[string]any)["start_time"] != "09:00" {
		t.Fatalf("data %v", data)
	}
	if len(added) != 1 || added[0] != (business.HoursInput{Day: "monday", Start: "09:00", End: "17:00"}) {
		t.Fatalf("core got %+v", added)
	}
	data = success(t, biz(t, s, "PUT", "/business/operating-hours/update", strings.NewReader(`{"id":9,"day":"Tuesday","start_time":"08:00","end_time":"12:00"}`)), 200, "Operating hours updated successfully")
	if data["id"] != 9.0 || data["day"] != "Tuesday" || data["end_time"] != "12:00" {
		t.Fatalf("update data %v", data)
	}
	data = success(t, biz(t, s, "DELETE", "/business/operating-hours/delete", strings.NewReader(`{"id":9}`)), 200, "Operating hours deleted successfully")
	if data["id"] != 9.0 {
		t.Fatalf("delete data %v", data)
	}
	w := biz(t, s, "GET", "/business/location/4/operating-hours", nil)
	var env struct{ Data []map[string]any }
	json.Unmarshal(w.Body.Bytes(), &env)
	if w.Code != 200 || len(env.Data) != 1 || env.Data[0]["day"] != "Sunday" {
		t.Fatalf("list: %d %s", w.Code, w.Body)
	}

	for body, mention := range map[string]string{
		`{"operatingHours":[]}`: "businessLocationId is required",
		`{"businessLocationId":4,"operatingHours":[{"day":"Monday","start_time":"09:00"}]}`:                               "operatingHours[0].end_time is required",
		`{"businessLocationId":"4","operatingHours":[]}`:                                                                  "businessLocationId must be an integer",
		`{"businessLocationId":4,"operatingHours":[{"day":"Monday","start_time":"09:00","end_time":"10:00","note":"x"}]}`: "note",
	} {
		w := biz(t, s, "POST", "/business/operating-hours/add", strings.NewReader(body))
		if e := errEnvelope(t, w); w.Code != 400 || !strings.Contains(e.Message, mention) {
			t.Errorf("%s: %d %q", body, w.Code, e.Message)
		}
	}
	for _, body := range []string{`{}`, `{"id":"9"}`} {
		if w := biz(t, s, "DELETE", "/business/operating-hours/delete", strings.NewReader(body)); w.Code != 400 {
			t.Errorf("delete %s: %d", body, w.Code)
		}
	}
	if len(m.AddHoursCalls()) != 1 || len(m.DeleteHoursCalls()) != 1 {
		t.Fatal("bad requests reached the core")
	}
}

func TestBusiness_CoreErrorsKeepTheirStatus(t *testing.T) {
	m := &BusinessMock{AddHoursFunc: func(context.Context, int64, []business.HoursInput) ([]business.Hours, error) {
		return nil, business.ErrDuplicateDay.WithMessage("Monday already has operating hours at this location")
	}, ProvidersFunc: func(context.Context, int64) ([]business.Provider, error) { return nil, business.ErrLocationNotFound }}
	s := newBusinessServer(t, m)
	w := biz(t, s, "POST", "/business/operating-hours/add", strings.NewReader(`{"businessLocationId":4,"operatingHours":[{"day":"Monday","start_time":"09:00","end_time":"10:00"}]}`))
	if e := errEnvelope(t, w); w.Code != 409 || e.Code != "duplicate_day" || !strings.Contains(e.Message, "Monday") {
		t.Fatalf("got %d %s %q", w.Code, e.Code, e.Message)
	}
	w = biz(t, s, "GET", "/business/location/4/providers", nil)
	if e := errEnvelope(t, w); w.Code != 404 || e.Code != "location_not_found" {
		t.Fatalf("got %d %s", w.Code, e.Code)
	}
}

func errCode(err error) string {
	var e *core.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
