package memory_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/memory"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// bigEHR answers every name search with five people and each of them
// with n observations, written anew each time (as decoded from an EHR).
type bigEHR struct{ n int }

func (bigEHR) SearchPatients(_ context.Context, q ehr.PatientQuery) ([]ehr.Patient, error) {
	var out []ehr.Patient
	for i := range 5 {
		out = append(out, ehr.Patient{ID: fmt.Sprintf("p%d", i), Source: "big", BirthDate: "1980-01-01",
			Name: ehr.HumanName{Family: "Family", Given: []string{fmt.Sprintf("Given%d", i)}}})
	}
	return out, nil
}

func (e bigEHR) SearchRecords(_ context.Context, q ehr.RecordQuery) ([]ehr.Record, error) {
	out := make([]ehr.Record, e.n)
	for i := range out {
		out[i] = ehr.Record{Type: q.Type, ID: q.PatientID + "-obs-" + strconv.Itoa(i), PatientID: q.PatientID,
			Date: "2024-03-01", Status: "final", Code: ehr.Coding{System: "http://loinc.org", Code: "8867-4", Display: "Heart rate"},
			Text: strings.Repeat("x", 64)}
	}
	return out, nil
}

// 300 distinct record searches of answers of 5 × 200 records: what the
// in-process caches keep stays within their bounds (it grew with every
// search when they were bounded by count alone).
func TestSearch_CachesStayBoundedOverDistinctRecordSearches(t *testing.T) {
	const cacheBytes, memoBytes = 4 << 20, 2 << 20
	svc := ehr.NewService(ehr.FixedSystems{Searched: []ehr.System{{Name: "big", SearchTypes: []string{"patient_record"}, Patients: bigEHR{200}, Records: bigEHR{200}}}},
		memory.New(0, cacheBytes), ehr.Config{CacheTTL: time.Hour, MemoBytes: memoBytes})
	ctx := core.WithActor(context.Background(), core.Actor{Subject: "u", Scopes: core.ParseScopes("user/Patient.rs user/Observation.rs")})
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base, peak := live(), uint64(0)
	for i := range 300 {
		r, err := svc.Search(ctx, ehr.SearchRequest{Query: fmt.Sprintf("family:F%d", i), RecordType: "observation"})
		if err != nil || r.TotalCount != 1000 {
			t.Fatalf("search %d: %v %+v", i, err, r)
		}
		if i%20 == 19 {
			if l := live(); l > base {
				peak = max(peak, l-base)
			}
		}
	}
	const mib = 1 << 20
	t.Logf("300 record searches of 1,000 records each: peak live heap +%.1f MiB (cache bound %d MiB, memo %d MiB)",
		float64(peak)/mib, cacheBytes/mib, memoBytes/mib)
	if peak > 2*(cacheBytes+memoBytes) {
		t.Errorf("live heap grew %.1f MiB over the searches; the caches are bounded at %d MiB", float64(peak)/mib, (cacheBytes+memoBytes)/mib)
	}
}
