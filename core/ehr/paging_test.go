package ehr

import (
	"math"
	"strings"
	"testing"
)

func TestPaging_PageAboveMaxPageIsInvalidAndTheOffsetCannotOverflow(t *testing.T) {
	for _, c := range []struct {
		name                string
		page, limit         int
		wantPage, wantLimit int
		wantErr             string // a field named in the error; "" for none
	}{
		{"absent", 0, 0, 1, DefaultLimit, ""},
		{"first", 1, 1, 1, 1, ""},
		{"last page, largest limit", MaxPage, MaxLimit, MaxPage, MaxLimit, ""},
		{"page above MaxPage", MaxPage + 1, 0, 0, 0, "page"},
		{"largest int page", math.MaxInt, MaxLimit, 0, 0, "page"},
		{"negative page", -1, 0, 0, 0, "page"},
		{"smallest int page", math.MinInt, 0, 0, 0, "page"},
		{"limit above MaxLimit", 1, MaxLimit + 1, 0, 0, "limit"},
		{"largest int limit", 1, math.MaxInt, 0, 0, "limit"},
		{"negative limit", 1, -1, 0, 0, "limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f fieldErrors
			page, limit := paging(c.page, c.limit, &f)
			err := f.err()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr+" must be between 1 and ") {
					t.Fatalf("got %v, want an error naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil || page != c.wantPage || limit != c.wantLimit {
				t.Fatalf("page %d limit %d err %v; want page %d limit %d", page, limit, err, c.wantPage, c.wantLimit)
			}
			if offset := (page - 1) * limit; offset < 0 || offset > MaxPage*MaxLimit {
				t.Fatalf("offset %d", offset)
			}
		})
	}
}
