package wsbot

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/carebridge/carebridge/core/ehr"
)

// Patient search: the PatientSearcher side of the client.

// SearchPatients asks the search action (Config.SearchAction) page by page
// until it has q.Max records (MaxPageSize when q.Max is not positive) or
// there are no more, for at most MaxPages pages. The payload carries the
// free text and the names as query, and birthdate, gender and identifier;
// what the protocol cannot carry (phone, the lastUpdated range) and the
// name parts are then checked on the records: family and given as
// case-insensitive prefixes, phone by its digits. The result is never nil
// when err is nil.
func (c *Client) SearchPatients(ctx context.Context, q ehr.PatientQuery) ([]ehr.Patient, error) {
	limit := q.Max
	if limit <= 0 {
		limit = MaxPageSize
	}
	p := searchPayload{
		Query:      strings.Join(strings.Fields(strings.Join([]string{q.Text, q.Given, q.Family}, " ")), " "),
		Birthdate:  q.BirthDate,
		Gender:     q.Gender,
		Identifier: q.Identifier,
		Limit:      min(limit, MaxPageSize),
	}
	out := []ehr.Patient{}
	seen := make(map[string]bool)
	for page := 1; page <= MaxPages; page++ {
		p.Page = page
		var res wireList[wirePatient]
		if err := c.call(ctx, c.searchAction, p, &res); err != nil {
			return nil, err
		}
		for _, w := range res.Items {
			pt := patientFromWire(w, c.name)
			if !matches(q, pt) {
				continue
			}
			if pt.ID != "" {
				if seen[pt.ID] {
					continue
				}
				seen[pt.ID] = true
			}
			out = append(out, pt)
			if len(out) >= limit {
				return out, nil
			}
		}
		size := orDefault(res.Limit, p.Limit)
		if len(res.Items) == 0 || len(res.Items) < size || page*size >= res.TotalCount {
			break
		}
	}
	return out, nil
}

// matches checks what the search payload cannot say exactly.
func matches(q ehr.PatientQuery, p ehr.Patient) bool {
	if q.Family != "" && !hasPrefixFold(p.Name.Family, q.Family) {
		return false
	}
	if q.Given != "" {
		found := false
		for _, g := range p.Name.Given {
			found = found || hasPrefixFold(g, q.Given)
		}
		if !found {
			return false
		}
	}
	if want := digits(q.Phone); want != "" {
		found := false
		for _, t := range p.Telecom {
			if t.System != "" && t.System != "phone" && t.System != "sms" {
				continue
			}
			got := digits(t.Value)
			found = found || got != "" && (strings.HasSuffix(got, want) || strings.HasSuffix(want, got))
		}
		if !found {
			return false
		}
	}
	if !p.LastUpdated.IsZero() {
		day := p.LastUpdated.UTC().Truncate(24 * time.Hour)
		if !q.UpdatedFrom.IsZero() && day.Before(q.UpdatedFrom.UTC().Truncate(24*time.Hour)) {
			return false
		}
		if !q.UpdatedTo.IsZero() && day.After(q.UpdatedTo.UTC().Truncate(24*time.Hour)) {
			return false
		}
	}
	return true
}

func hasPrefixFold(s, prefix string) bool {
	s, prefix = strings.ToLower(strings.TrimSpace(s)), strings.ToLower(strings.TrimSpace(prefix))
	return strings.HasPrefix(s, prefix)
}

func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) {
			return r
		}
		return -1
	}, s)
}
