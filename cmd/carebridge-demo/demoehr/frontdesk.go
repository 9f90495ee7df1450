package demoehr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
)

// The front desk: changes made directly in the running demo's FHIR server,
// as its own screens make them (not through Carebridge), so that EHR sync
// hears them and publishes them with origin "ehr". `carebridge-demo
// front-desk` runs these.

// FrontDeskActions are the changes the front desk makes, with the event
// each becomes.
var FrontDeskActions = map[string]string{
	"book":   "appointment.booked",
	"arrive": "appointment.status_changed",
	"move":   "appointment.rescheduled",
	"cancel": "appointment.cancelled",
}

// ErrNoFHIRDemo is the front desk's answer when the demo runs without its
// FHIR server (no Node.js).
var ErrNoFHIRDemo = errors.New("the demo runs without its FHIR server (no Node.js): the front desk needs it")

// FrontDesk changes appointments in the demo's FHIR server.
type FrontDesk struct {
	base, apiKey string
	client       *http.Client
}

// OpenFrontDesk reads the demo's EHR systems file (secrets under key) and
// returns the front desk of its FHIR server.
func OpenFrontDesk(file string, key []byte) (*FrontDesk, error) {
	cfg, err := ehrkinds.All().Load(file, key, func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	s, ok := cfg.System(FHIRName)
	if !ok {
		return nil, ErrNoFHIRDemo
	}
	return &FrontDesk{base: s.BaseURL, apiKey: s.Auth.APIKey.Value(), client: &http.Client{Timeout: 30 * time.Second}}, nil
}

// Change is an appointment the front desk changed.
type Change struct {
	ID, Status string
	Start, End time.Time
}

// Do makes the change action (a key of FrontDeskActions). book books the
// first practitioner three days ahead at 15:00 UTC for 30 minutes; the
// others change appointment id, or, when id is empty, the booked
// appointment changed last (the one just booked through Carebridge, say):
// arrive marks it arrived, move moves it an hour later, cancel cancels it.
func (f *FrontDesk) Do(ctx context.Context, action, id string) (Change, error) {
	if _, ok := FrontDeskActions[action]; !ok {
		return Change{}, fmt.Errorf("unknown front-desk action %q (book, arrive, move or cancel)", action)
	}
	if action == "book" {
		return f.book(ctx)
	}
	res, err := f.appointment(ctx, id)
	if err != nil {
		return Change{}, err
	}
	switch action {
	case "arrive":
		res["status"] = "arrived"
	case "cancel":
		res["status"] = "cancelled"
	case "move":
		for _, k := range []string{"start", "end"} {
			t, err := time.Parse(time.RFC3339, fmt.Sprint(res[k]))
			if err != nil {
				return Change{}, fmt.Errorf("appointment %s: %s: %w", res["id"], k, err)
			}
			res[k] = t.Add(time.Hour).UTC().Format(time.RFC3339)
		}
	}
	var out map[string]any
	if err := f.call(ctx, http.MethodPut, "Appointment/"+fmt.Sprint(res["id"]), res, http.StatusOK, &out); err != nil {
		return Change{}, err
	}
	return changeOf(out)
}

// book creates an appointment with the first practitioner and a contained
// synthetic patient.
func (f *FrontDesk) book(ctx context.Context) (Change, error) {
	var bundle struct {
		Entry []struct {
			Resource struct {
				ID string `json:"id"`
			} `json:"resource"`
		} `json:"entry"`
	}
	if err := f.call(ctx, http.MethodGet, "Practitioner?_sort=_lastUpdated&_count=1", nil, http.StatusOK, &bundle); err != nil {
		return Change{}, err
	}
	if len(bundle.Entry) == 0 {
		return Change{}, errors.New("the FHIR server holds no practitioner")
	}
	start := time.Now().UTC().AddDate(0, 0, 3).Truncate(24 * time.Hour).Add(15 * time.Hour)
	p := person(0)
	res := map[string]any{
		"resourceType": "Appointment", "status": "booked", "description": "booked by phone at the front desk",
		"start": start.Format(time.RFC3339), "end": start.Add(30 * time.Minute).Format(time.RFC3339),
		"contained": []any{map[string]any{"resourceType": "Patient", "id": "p",
			"name": []any{map[string]any{"family": p.Name.Family, "given": []any{p.Name.Given[0]}}}, "birthDate": p.BirthDate}},
		"participant": []any{
			map[string]any{"actor": map[string]any{"reference": "Practitioner/" + bundle.Entry[0].Resource.ID}, "status": "accepted"},
			map[string]any{"actor": map[string]any{"reference": "#p"}, "status": "accepted"},
		},
	}
	var out map[string]any
	if err := f.call(ctx, http.MethodPost, "Appointment", res, http.StatusCreated, &out); err != nil {
		return Change{}, err
	}
	return changeOf(out)
}

// appointment reads appointment id, or the booked one changed last when id
// is empty.
func (f *FrontDesk) appointment(ctx context.Context, id string) (map[string]any, error) {
	if id != "" {
		var res map[string]any
		err := f.call(ctx, http.MethodGet, "Appointment/"+url.PathEscape(id), nil, http.StatusOK, &res)
		return res, err
	}
	var bundle struct {
		Entry []struct {
			Resource map[string]any `json:"resource"`
		} `json:"entry"`
	}
	if err := f.call(ctx, http.MethodGet, "Appointment?status=booked&_sort=-_lastUpdated&_count=1", nil, http.StatusOK, &bundle); err != nil {
		return nil, err
	}
	if len(bundle.Entry) == 0 {
		return nil, errors.New("no booked appointment in the FHIR server: book one first (through Carebridge, or front-desk book)")
	}
	return bundle.Entry[0].Resource, nil
}

// call sends body (JSON, when not nil) to path under the FHIR base and
// decodes an answer of status want into out.
func (f *FrontDesk) call(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.base+"/"+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/fhir+json")
	req.Header.Set("Content-Type", "application/fhir+json")
	req.Header.Set("X-API-Key", f.apiKey)
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d: %.300s", method, path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// changeOf is the Change of a stored Appointment.
func changeOf(res map[string]any) (Change, error) {
	c := Change{ID: fmt.Sprint(res["id"]), Status: fmt.Sprint(res["status"])}
	var err1, err2 error
	c.Start, err1 = time.Parse(time.RFC3339, fmt.Sprint(res["start"]))
	c.End, err2 = time.Parse(time.RFC3339, fmt.Sprint(res["end"]))
	if err := errors.Join(err1, err2); err != nil || c.ID == "" {
		return Change{}, fmt.Errorf("the FHIR server answered an appointment without id or times: %v", err)
	}
	return c, nil
}
