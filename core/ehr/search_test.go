package ehr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/carebridge/carebridge/core"
)

// memCache is an in-memory Cache through the moq mock.
func memCache() *CacheMock {
	var mu sync.Mutex
	vals := map[string]Answer{}
	counts := map[string]int64{}
	return &CacheMock{
		GetFunc: func(_ context.Context, k string) (Answer, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			v, ok := vals[k]
			return v, ok, nil
		},
		SetFunc: func(_ context.Context, k string, v Answer, _ time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			vals[k] = v
			return nil
		},
		IncrFunc: func(_ context.Context, k string, ttl time.Duration) (int64, time.Duration, error) {
			mu.Lock()
			defer mu.Unlock()
			counts[k]++
			return counts[k], ttl, nil
		},
	}
}

func ehrWith(records []Patient, err error) *PatientSearcherMock {
	return &PatientSearcherMock{SearchPatientsFunc: func(context.Context, PatientQuery) ([]Patient, error) {
		return records, err
	}}
}

// caller is a member of staff: the scopes of a dev token.
func caller(sub string) context.Context {
	return core.WithActor(context.Background(), core.Actor{Subject: sub, Scopes: core.ParseScopes("user/Patient.rs user/Appointment.cruds")})
}

// patientCaller is a patient who may book, list and change its own
// appointments.
func patientCaller(sub string) context.Context {
	return core.WithActor(context.Background(), core.Actor{Subject: sub, Scopes: core.ParseScopes("patient/Appointment.cus")})
}

func pat(id, family, given, birth string, ids ...Identifier) Patient {
	return Patient{ID: id, Name: HumanName{Family: family, Given: []string{given}}, BirthDate: birth, Identifiers: ids}
}

func mrn(system, value string) Identifier {
	return Identifier{System: system, Value: value, Type: "MR"}
}

func withSource(s string, p Patient) Patient { p.Source = s; return p }

func service(systems ...System) *Service {
	return NewService(FixedSystems{Searched: systems}, memCache(), Config{CacheTTL: time.Minute, RateLimit: 100})
}

func sys(name string, p PatientSearcher, sites ...string) System {
	return System{Name: name, SearchTypes: []string{SearchTypePatientRecord}, Sites: sites, Patients: p}
}

func TestSearch_MergesPaginatesAndCaches(t *testing.T) {
	var a []Patient
	for i := range 45 {
		a = append(a, pat(fmt.Sprint("a", i), fmt.Sprintf("Family%02d", i), "X", "2000-01-01"))
	}
	ea := ehrWith(a, nil)
	// b0 is a0 by the certain rule: name, birth date and a phone.
	a[0].Telecom = []ContactPoint{{System: "phone", Value: "217-555-0100"}}
	b0 := pat("b0", "Family00", "X", "2000-01-01")
	b0.Telecom = []ContactPoint{{System: "phone", Value: "(217) 555-0100"}}
	eb := ehrWith([]Patient{b0}, nil)
	s := service(sys("a", ea), sys("b", eb))

	var seen []string
	for page := 1; page <= 3; page++ {
		r, err := s.Search(caller("alice"), SearchRequest{Query: "Family", Page: PageRequest{Page: page}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != StatusSuccess || r.TotalCount != 45 || r.Page != page || r.Limit != 20 || r.CacheHit != (page > 1) ||
			fmt.Sprint(r.Sources) != "[a b]" || len(r.RequestID) != 36 {
			t.Fatalf("page %d: %+v", page, r)
		}
		for _, p := range r.Results {
			seen = append(seen, p.ID)
		}
		if page == 1 && len(r.Results[0].Sources) != 2 {
			t.Fatalf("Family00 not merged: %+v", r.Results[0])
		}
	}
	if len(seen) != 45 {
		t.Fatalf("pages held %d people, want 45 without overlap", len(seen))
	}
	if n := len(ea.SearchPatientsCalls()); n != 1 {
		t.Fatalf("EHR a asked %d times; pages 2 and 3 must come from the cache", n)
	}
	if q := ea.SearchPatientsCalls()[0].Q; q.Text != "Family" || q.Max != defaultMaxPerSystem {
		t.Fatalf("query %+v", q)
	}
	// Another caller has its own cache entries.
	if r, _ := s.Search(caller("bob"), SearchRequest{Query: "Family"}); r.CacheHit || len(ea.SearchPatientsCalls()) != 2 {
		t.Fatal("a cache entry was shared between callers")
	}
}

func TestSearch_StatusesWhenEHRsFail(t *testing.T) {
	timeout := &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "b did not answer in time"}
	bad := &core.Error{Kind: core.KindBadGateway, Code: "ehr_error", Message: "c answered 500"}
	ok := ehrWith([]Patient{pat("1", "Lopez", "Ana", "1980-01-01")}, nil)

	r, err := service(sys("a", ok), sys("b", ehrWith(nil, timeout))).Search(caller("u"), SearchRequest{Query: "Ana"})
	if err != nil || r.Status != StatusPartial || len(r.Results) != 1 || len(r.Errors) != 1 || r.Errors[0] != (SourceError{"b", "ehr_timeout", "b did not answer in time"}) {
		t.Fatalf("partial: %+v %v", r, err)
	}
	r, _ = service(sys("b", ehrWith(nil, timeout)), sys("c", ehrWith(nil, bad))).Search(caller("u"), SearchRequest{Query: "Ana"})
	if r.Status != StatusError || r.AllTimedOut() || len(r.Results) != 0 || len(r.Errors) != 2 {
		t.Fatalf("all failed: %+v", r)
	}
	r, _ = service(sys("b", ehrWith(nil, timeout))).Search(caller("u"), SearchRequest{Query: "Ana"})
	if r.Status != StatusError || !r.AllTimedOut() {
		t.Fatalf("all timed out: %+v", r)
	}
	r, _ = service(sys("x", ehrWith(nil, errors.New("dial tcp: secret-host refused")))).Search(caller("u"), SearchRequest{Query: "Ana"})
	if r.Errors[0].Code != "ehr_error" || strings.Contains(r.Errors[0].Message, "secret-host") {
		t.Fatalf("internal detail reached the answer: %+v", r.Errors)
	}
}

func TestSearch_PartialResultsAreNotCached(t *testing.T) {
	flaky := &PatientSearcherMock{}
	calls := 0
	flaky.SearchPatientsFunc = func(context.Context, PatientQuery) ([]Patient, error) {
		calls++
		if calls == 1 {
			return nil, &core.Error{Kind: core.KindBadGateway, Code: "ehr_error", Message: "down"}
		}
		return []Patient{pat("1", "A", "B", "2000-01-01")}, nil
	}
	s := service(sys("a", ehrWith(nil, nil)), sys("b", flaky))
	first, _ := s.Search(caller("u"), SearchRequest{Query: "x"})
	second, _ := s.Search(caller("u"), SearchRequest{Query: "x"})
	if first.Status != StatusPartial || second.CacheHit || second.Status != StatusSuccess || second.TotalCount != 1 {
		t.Fatalf("first %+v, second %+v", first, second)
	}
}

func TestSearch_RoutesBySearchTypeAndSite(t *testing.T) {
	main, north := ehrWith(nil, nil), ehrWith(nil, nil)
	s := service(sys("main", main, "main-campus"), sys("north", north, "north"))
	r, err := s.Search(caller("u"), SearchRequest{Query: "x", Location: "north"})
	if err != nil || fmt.Sprint(r.Sources) != "[north]" || len(main.SearchPatientsCalls()) != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = s.Search(caller("u"), SearchRequest{Query: "x", Location: "nowhere"})
	if err != nil || r.Status != StatusSuccess || r.TotalCount != 0 || len(r.Sources) != 0 {
		t.Fatalf("unknown site: %+v %v", r, err)
	}
	if _, err := service().Search(caller("u"), SearchRequest{Query: "x"}); !errors.Is(err, ErrNoEHRConfigured) {
		t.Fatalf("no EHR: %v", err)
	}
	other := System{Name: "labs", SearchTypes: []string{"lab_result"}, Patients: main}
	if _, err := service(other).Search(caller("u"), SearchRequest{Query: "x"}); !errors.Is(err, ErrNoEHRConfigured) {
		t.Fatalf("no EHR for the type: %v", err)
	}
}

func TestSearch_RateLimitsEachCaller(t *testing.T) {
	e := ehrWith(nil, nil)
	s := NewService(FixedSystems{Searched: []System{sys("a", e)}}, memCache(), Config{RateLimit: 2})
	for i := range 2 {
		if _, err := s.Search(caller("u"), SearchRequest{Query: fmt.Sprint("q", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Search(caller("u"), SearchRequest{Query: "q3"})
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Kind != core.KindRateLimited || ce.RetryAfter <= 0 {
		t.Fatalf("third search: %v", err)
	}
	if _, err := s.Search(caller("other"), SearchRequest{Query: "q"}); err != nil {
		t.Fatalf("another caller was limited: %v", err)
	}
	if len(e.SearchPatientsCalls()) != 3 {
		t.Fatalf("a limited search reached the EHR")
	}
}

func TestSearch_RefusesBadRequestsBeforeAnyEHR(t *testing.T) {
	e := ehrWith(nil, nil)
	s := service(sys("a", e))
	if _, err := s.Search(context.Background(), SearchRequest{Query: "x"}); !errors.Is(err, core.ErrUnauthenticated) {
		t.Fatalf("no caller: %v", err)
	}
	if _, err := s.Search(caller("u"), SearchRequest{Query: "x", Page: PageRequest{Limit: 500}}); !errors.Is(err, ErrInvalidSearch) {
		t.Fatalf("bad limit: %v", err)
	}
	for _, scopes := range []string{"", "patient/Patient.rs", "user/Patient.r user/Appointment.cruds"} {
		ctx := core.WithActor(context.Background(), core.Actor{Subject: "u", Scopes: core.ParseScopes(scopes)})
		if _, err := s.Search(ctx, SearchRequest{Query: "x"}); !errors.Is(err, core.ErrInsufficientScope) {
			t.Fatalf("scopes %q: %v", scopes, err)
		}
	}
	system := core.WithActor(context.Background(), core.Actor{Subject: "svc", Scopes: core.ParseScopes("system/Patient.rs")})
	if _, err := s.Search(system, SearchRequest{Query: "x", Page: PageRequest{Limit: 500}}); !errors.Is(err, ErrInvalidSearch) {
		t.Fatalf("a system scope is enough to be checked further: %v", err)
	}
	if len(e.SearchPatientsCalls()) != 0 {
		t.Fatal("a refused request reached the EHR")
	}
}

func TestSearch_QueriesEHRsInParallel(t *testing.T) {
	// In the bubble time is fake: three 150 ms EHRs asked in parallel take
	// exactly 150 ms, one after another 450 ms.
	synctest.Test(t, func(t *testing.T) {
		slow := func(d time.Duration) *PatientSearcherMock {
			return &PatientSearcherMock{SearchPatientsFunc: func(context.Context, PatientQuery) ([]Patient, error) {
				time.Sleep(d)
				return nil, nil
			}}
		}
		s := service(sys("a", slow(150*time.Millisecond)), sys("b", slow(150*time.Millisecond)), sys("c", slow(150*time.Millisecond)))
		start := time.Now()
		if _, err := s.Search(caller("u"), SearchRequest{Query: "x"}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 150*time.Millisecond {
			t.Fatalf("three 150 ms EHRs took %v: not in parallel", took)
		}
	})
}

func TestCacheKey_IsVersioned(t *testing.T) {
	s := NewService(FixedSystems{}, memCache(), Config{})
	if k := s.cacheKey("subject", validated{}, nil); !strings.HasPrefix(k, cacheKeyPrefix) || cacheKeyPrefix != "search:v4:" {
		t.Errorf("cache key %q; want the prefix search:v4:", k)
	}
}

// The cache's names are keyed: without the service's key, nobody can
// compute the name of a caller's search to test a guess against a shared
// cache.
func TestCacheKey_IsKeyed(t *testing.T) {
	v := validated{searchType: "patient_record", query: PatientQuery{Family: "smith"}}
	a := NewService(FixedSystems{}, memCache(), Config{KeyKey: []byte("one")})
	b := NewService(FixedSystems{}, memCache(), Config{KeyKey: []byte("two")})
	if a.cacheKey("u", v, nil) == b.cacheKey("u", v, nil) {
		t.Error("two keys name a search alike")
	}
	if a.cacheKey("u", v, nil) != a.cacheKey("u", v, nil) {
		t.Error("a name is not stable under one key")
	}
}
