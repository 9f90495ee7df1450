package fhirserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ScaleName is a name filter of SeedScale's practitioners (Scale.Named).
const ScaleName = "scale01"

// batchSize is how many resources one seeding batch Bundle carries.
const batchSize = 250

// Batch creates resources (FHIR JSON objects with resourceType) with one
// POST of a batch Bundle to the base for every batchSize of them, and
// returns their ids in order. Any entry not created is an error.
func (s *Server) Batch(resources []map[string]any) ([]string, error) {
	ids := make([]string, 0, len(resources))
	for start := 0; start < len(resources); start += batchSize {
		chunk := resources[start:min(start+batchSize, len(resources))]
		entries := make([]any, len(chunk))
		for i, r := range chunk {
			entries[i] = map[string]any{"resource": r, "request": map[string]any{"method": "POST", "url": r["resourceType"]}}
		}
		body, err := json.Marshal(map[string]any{"resourceType": "Bundle", "type": "batch", "entry": entries})
		if err != nil {
			return nil, fmt.Errorf("batch: %w", err)
		}
		req, err := http.NewRequest(http.MethodPost, s.base, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("batch: %w", err)
		}
		req.Header.Set("Content-Type", "application/fhir+json")
		out, status, err := s.do(req)
		if err != nil {
			return nil, fmt.Errorf("batch: %w", err)
		}
		var answer struct {
			Entry []struct {
				Resource struct {
					ID string `json:"id"`
				} `json:"resource"`
				Response struct {
					Status string `json:"status"`
				} `json:"response"`
			} `json:"entry"`
		}
		if status != http.StatusOK || json.Unmarshal(out, &answer) != nil || len(answer.Entry) != len(chunk) {
			return nil, fmt.Errorf("batch: status %d: %.500s", status, out)
		}
		for i, e := range answer.Entry {
			if !strings.HasPrefix(e.Response.Status, "201") || e.Resource.ID == "" {
				return nil, fmt.Errorf("batch: entry %d: status %q", start+i, e.Response.Status)
			}
			ids = append(ids, e.Resource.ID)
		}
	}
	return ids, nil
}

// Scale is what SeedScale stored: the practitioner ids, and each
// practitioner's appointment ids.
type Scale struct {
	Practitioners []string
	Appointments  map[string][]string
	// Named counts the practitioners whose family name starts with
	// ScaleName (a name filter that the seeded names answer the same
	// whether the server matches the start of a name part or any part).
	Named int
}

// SeedScale stores practitioners active Practitioners, each with an
// active PractitionerRole (specialty "Scale specialty N%7", location
// Location/scale-loc-N%3), and appointments booked Appointments spread
// over them round robin (a contained patient, one a day from start), with
// batch Bundles sent by 4 workers.
func (s *Server) SeedScale(practitioners, appointments int, start time.Time) (Scale, error) {
	prs := make([]map[string]any, practitioners)
	sc := Scale{Appointments: map[string][]string{}}
	for i := range prs {
		family := fmt.Sprintf("Scale%05d", i)
		if strings.HasPrefix(family, "Scale01") {
			sc.Named++
		}
		prs[i] = map[string]any{"resourceType": "Practitioner", "active": true,
			"name": []any{map[string]any{"family": family, "given": []any{"Dana"}, "text": "Dana " + family}}}
	}
	ids, err := s.batchParallel(prs)
	if err != nil {
		return Scale{}, err
	}
	sc.Practitioners = ids
	roles := make([]map[string]any, len(ids))
	for i, id := range ids {
		roles[i] = map[string]any{"resourceType": "PractitionerRole", "active": true,
			"practitioner": map[string]any{"reference": "Practitioner/" + id},
			"specialty":    []any{map[string]any{"text": fmt.Sprintf("Scale specialty %d", i%7)}},
			"location":     []any{map[string]any{"reference": fmt.Sprintf("Location/scale-loc-%d", i%3)}}}
	}
	if _, err := s.batchParallel(roles); err != nil {
		return Scale{}, err
	}
	aps := make([]map[string]any, appointments)
	owner := make([]string, appointments)
	for i := range aps {
		pid := ids[i%len(ids)]
		owner[i] = pid
		st := start.Add(time.Duration(i) * 24 * time.Hour).UTC()
		aps[i] = map[string]any{"resourceType": "Appointment", "status": "booked",
			"start": st.Format(time.RFC3339), "end": st.Add(30 * time.Minute).Format(time.RFC3339),
			"contained": []any{map[string]any{"resourceType": "Patient", "id": "patient",
				"name":    []any{map[string]any{"family": "Doe", "given": []any{"Jo"}}},
				"telecom": []any{map[string]any{"system": "email", "value": fmt.Sprintf("p%d@example.org", i%10)}}}},
			"participant": []any{
				map[string]any{"actor": map[string]any{"reference": "Practitioner/" + pid}, "status": "accepted"},
				map[string]any{"actor": map[string]any{"reference": "#patient"}, "status": "accepted"},
			}}
	}
	apIDs, err := s.batchParallel(aps)
	if err != nil {
		return Scale{}, err
	}
	for i, id := range apIDs {
		sc.Appointments[owner[i]] = append(sc.Appointments[owner[i]], id)
	}
	return sc, nil
}

// batchParallel is Batch with 4 workers, each sending batchSize chunks;
// the ids follow resources (the server may store the chunks in another
// order).
func (s *Server) batchParallel(resources []map[string]any) ([]string, error) {
	var (
		results = make([][]string, (len(resources)+batchSize-1)/batchSize)
		next    atomic.Int64
		wg      sync.WaitGroup
		errs    = make(chan error, 4)
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(results) {
					return
				}
				ids, err := s.Batch(resources[i*batchSize : min((i+1)*batchSize, len(resources))])
				if err != nil {
					errs <- err
					return
				}
				results[i] = ids
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range results {
		ids = append(ids, r...)
	}
	return ids, nil
}
