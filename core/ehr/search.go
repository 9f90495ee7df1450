package ehr

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/carebridge/carebridge/core"
)

// System is one configured EHR system as the search gateway sees it.
type System struct {
	Name        string
	SearchTypes []string // which search types it serves (patient_record)
	Sites       []string // filters.location values it serves; empty: none named
	Patients    PatientSearcher
	Records     RecordSearcher // nil: it cannot search clinical records
}

// Config tunes the gateway.
type Config struct {
	CacheTTL  time.Duration // result cache lifetime (0: no caching)
	RateLimit int           // searches per minute per caller (0: unlimited)
	// MaxPerSystem is how many records are asked of each EHR for one
	// request; every page of a request is cut from the same merged list.
	MaxPerSystem int
	// Links reads the person links of the acting business; nil: no links.
	Links LinkReader
	// MemoBytes bounds the matched answers kept in process (about; 0:
	// 64 MiB).
	MemoBytes int
	// KeyKey keys the names of what the gateway keeps in the cache
	// (answers, rate-limit counters): HMAC-SHA256 of the caller and the
	// query, so a name in a shared cache can be neither guessed nor
	// checked against a guess.
	KeyKey []byte
}

// LinkReader reads the person links of a business (LinkStore has it).
type LinkReader interface {
	Links(ctx context.Context, business string) (*LinkSet, error)
}

// Search statuses.
const (
	StatusSuccess = "success"
	StatusPartial = "partial"
	StatusError   = "error"
)

// SearchResult is the gateway's answer.
type SearchResult struct {
	RequestID string
	Status    string
	// RecordType is the clinical type searched; "" for a search of
	// people. Results holds the page of a search of people, Records that
	// of a record search.
	RecordType ClinicalType
	Results    []Person
	Records    []RecordItem
	TotalCount int
	Page       int
	Limit      int
	SearchTime time.Duration
	Sources    []string // systems that answered
	CacheHit   bool
	Errors     []SourceError
}

// AllTimedOut reports whether every system failed with a time-out.
func (r *SearchResult) AllTimedOut() bool {
	if r.Status != StatusError || len(r.Errors) == 0 {
		return false
	}
	for _, e := range r.Errors {
		if e.Code != "ehr_timeout" {
			return false
		}
	}
	return true
}

// SourceError is the failure of one system.
type SourceError struct {
	Source  string
	Code    string
	Message string
}

// The gateway's own failures.
var (
	ErrNoEHRConfigured = &core.Error{Kind: core.KindUnavailable, Code: "no_ehr_configured", Message: "No EHR system is configured for this search"}
	ErrRateLimited     = &core.Error{Kind: core.KindRateLimited, Code: "rate_limited", Message: "Too many searches; try again later"}
)

// cacheKeyPrefix versions the search cache's keys: a Cache adapter that
// changes the format it keeps answers in bumps it (through a change here),
// so entries written in the old format are never read as the new one
// (they are left to expire).
const cacheKeyPrefix = "search:v4:"

const (
	rateWindow          = time.Minute
	defaultMaxPerSystem = 200
)

// Service is the search gateway.
type Service struct {
	systems Systems
	cache   Cache
	recent  *recent
	cfg     Config
	now     func() time.Time
}

// recentEntries bounds the matched answers kept in process, and
// defaultMemoBytes their size when Config.MemoBytes is not set.
const (
	recentEntries    = 256
	defaultMemoBytes = 64 << 20
)

// NewService returns the gateway over the systems in force (in the order of
// the EHR systems file, which is also the order of merged sources); each
// search asks systems once.
func NewService(systems Systems, cache Cache, cfg Config) *Service {
	if cfg.MaxPerSystem <= 0 {
		cfg.MaxPerSystem = defaultMaxPerSystem
	}
	if cfg.MemoBytes <= 0 {
		cfg.MemoBytes = defaultMemoBytes
	}
	return &Service{systems: systems, cache: cache, recent: newRecent(recentEntries, cfg.MemoBytes), cfg: cfg, now: time.Now}
}

// Search validates the request, applies the caller's rate limit, answers
// from the cache or fans the query out to the systems that serve it, and
// merges their records into one sorted list of people, of which it returns
// the requested page. When every system fails the result has status error
// (and no error is returned); request, authentication and rate-limit
// failures are errors.
func (s *Service) Search(ctx context.Context, r SearchRequest) (*SearchResult, error) {
	start := s.now()
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return nil, core.ErrUnauthenticated
	}
	t, err := ParseRecordType(r.RecordType)
	if err != nil {
		return nil, err
	}
	if err := checkSearchOf(actor, t); err != nil {
		return nil, err
	}
	v, err := validate(r, t)
	if err != nil {
		return nil, err
	}
	biz := r.Business
	if err := checkActing(s.systems, biz); err != nil {
		return nil, err
	}
	// The caller's counters and cache entries are per acting business.
	caller := scoped(actor.Subject, biz)
	if err := s.limit(ctx, caller); err != nil {
		return nil, err
	}
	systems, err := s.route(v, biz)
	if err != nil {
		return nil, err
	}
	links, err := s.linksOf(ctx, biz)
	if err != nil {
		return nil, err
	}
	res := &SearchResult{RequestID: core.NewUUID(), RecordType: t, Page: v.page, Limit: v.limit, Sources: []string{}}
	view, err := s.answer(ctx, res, caller, v, systems, links, start)
	if err != nil {
		return nil, err
	}
	res.fill(view, v)
	res.SearchTime = s.now().Sub(start)
	return res, nil
}

// ErrLinksUnavailable is a search refused because the acting business's
// person links cannot be read: without them, records a member kept apart
// could be merged (fail closed).
var ErrLinksUnavailable = &core.Error{Kind: core.KindUnavailable, Code: "links_unavailable",
	Message: "The practice's person links cannot be read; try again later"}

// linksOf reads the person links of business (none when it is "" or no
// reader is configured).
func (s *Service) linksOf(ctx context.Context, business string) (*LinkSet, error) {
	if business == "" || s.cfg.Links == nil {
		return nil, nil
	}
	links, err := s.cfg.Links.Links(ctx, business)
	if err != nil {
		return nil, ErrLinksUnavailable.Wrap(fmt.Errorf("read person links: %w", err))
	}
	return links, nil
}

// answer is the answer of systems to the caller's search v, its records
// matched into people with links: from this process's memory of recent
// answers when it has it, else from the cache (res.CacheHit), else asked
// of the systems, with their failures in res.Errors; an answer without
// failures is cached. The cache keeps what the systems answered, before
// matching, so a link changes the next answer, cached or not.
func (s *Service) answer(ctx context.Context, res *SearchResult, caller string, v validated, systems []System, links *LinkSet, start time.Time) (view, error) {
	key := s.cacheKey(caller, v, systems)
	caching := s.cfg.CacheTTL > 0 && len(systems) > 0
	memo := key + "\x00" + links.Digest()
	if caching {
		if seen, ok := s.recent.get(memo, start); ok {
			res.CacheHit = true
			return seen, nil
		}
		raw, hit, err := s.cache.Get(ctx, key)
		if err != nil {
			return view{}, fmt.Errorf("search cache: %w", err)
		}
		if hit {
			res.CacheHit = true
			out := resolve(raw, v, links)
			s.recent.put(memo, out, raw.Size(), start.Add(min(recentFromShared, s.cfg.CacheTTL)), start)
			return out, nil
		}
	}
	raw, failures, err := s.ask(ctx, systems, v)
	if err != nil {
		return view{}, err
	}
	res.Errors = failures
	out := resolve(raw, v, links)
	// A cache that cannot store only costs the next request a miss.
	if len(failures) == 0 && caching && s.cache.Set(ctx, key, raw, s.cfg.CacheTTL) == nil {
		s.recent.put(memo, out, raw.Size(), start.Add(s.cfg.CacheTTL), start)
	}
	return out, nil
}

// view is an answer matched: its people, or a record search's items, and
// the systems that answered.
type view struct {
	People  []Person
	Records []RecordItem
	Sources []string
}

// resolve matches raw's people with links and, for a record search,
// merges its records by the people they belong to.
func resolve(raw Answer, v validated, links *LinkSet) view {
	people := MatchPeople(raw.Patients, links)
	if v.recordType == "" {
		return view{People: people, Sources: raw.Sources}
	}
	return view{Records: MergeRecords(raw.RecordSets, personIDs(people)), Sources: raw.Sources}
}

// fill sets the sources, the count, the page v asks for and the status of
// r from merged and r.Errors.
func (r *SearchResult) fill(merged view, v validated) {
	r.Sources = append(r.Sources, merged.Sources...)
	if v.recordType == "" {
		r.TotalCount, r.Results = len(merged.People), pageOf(merged.People, v)
	} else {
		r.TotalCount, r.Records = len(merged.Records), pageOf(merged.Records, v)
	}
	switch {
	case len(r.Errors) == 0:
		r.Status = StatusSuccess
	case len(merged.Sources) > 0:
		r.Status = StatusPartial
	default:
		r.Status = StatusError
	}
}

// pageOf is the page of all that v asks for.
func pageOf[T any](all []T, v validated) []T {
	from := min((v.page-1)*v.limit, len(all))
	return all[from:min(from+v.limit, len(all))]
}

// scoped names a caller acting for business in counter and cache keys: its
// subject alone when it acts for none.
func scoped(subject, business string) string {
	if business == "" {
		return subject
	}
	return subject + "\x00" + business
}

// limit counts the search against the fixed one-minute window of caller
// (scoped).
func (s *Service) limit(ctx context.Context, caller string) error {
	if s.cfg.RateLimit <= 0 {
		return nil
	}
	return countCall(ctx, s.cache, "rl:v2:"+keyed(s.cfg.KeyKey, caller), s.cfg.RateLimit, ErrRateLimited, "searches")
}

// countCall counts one call against the fixed one-minute window of the
// counter name; past limit calls it is refused as base, saying how many
// what were allowed and when to try again (Retry-After).
func countCall(ctx context.Context, c Counter, name string, limit int, base *core.Error, what string) error {
	n, ttl, err := c.Incr(ctx, name, rateWindow)
	if err != nil {
		return fmt.Errorf("rate limit counter: %w", err)
	}
	if n > int64(limit) {
		e := base.WithMessage("More than %d %s in a minute; try again in %d s", limit, what, int(ttl.Seconds())+1)
		e.RetryAfter = max(ttl, time.Second)
		return e
	}
	return nil
}

// route picks the systems of business that serve the search type and,
// when a location is asked for, that site.
func (s *Service) route(v validated, business string) ([]System, error) {
	var out []System
	serving := 0
	for _, sys := range s.systems.Search(business) {
		if !slices.Contains(sys.SearchTypes, v.searchType) {
			continue
		}
		serving++
		if v.location == "" || slices.Contains(sys.Sites, v.location) {
			out = append(out, sys)
		}
	}
	if serving == 0 {
		return nil, ErrNoEHRConfigured.WithMessage("No EHR system is configured for %s", v.searchType)
	}
	return out, nil
}

// Answer is what the systems asked answered, before matching, as the
// Cache keeps it (each Cache adapter owns its encoding): the patients
// they found, each tagged with its system's name, and for a record search
// the records each system read of them.
type Answer struct {
	Patients   []Patient
	RecordSets []SourceRecords // a record search's records, per system that answered
	Sources    []string
}

// ask asks the systems v's search: the people they find, and for a record
// search the records of those people.
func (s *Service) ask(ctx context.Context, systems []System, v validated) (Answer, []SourceError, error) {
	if v.recordType != "" {
		return s.searchRecords(ctx, systems, v)
	}
	a, failures := s.fanOut(ctx, systems, v.query)
	return a, failures, nil
}

// fanOut queries the systems in parallel.
func (s *Service) fanOut(ctx context.Context, systems []System, q PatientQuery) (Answer, []SourceError) {
	q.Max = s.cfg.MaxPerSystem
	records, errs := findPeople(ctx, systems, q)
	sources, failures, ok := outcomes(systems, errs)
	return Answer{Patients: tagged(systems, records, ok), Sources: sources}, failures
}

// outcomes sorts the systems by errs (one per system): the names of those
// that answered, the failures of the others, and the indexes of those
// that answered.
func outcomes(systems []System, errs []error) (sources []string, failures []SourceError, ok []int) {
	for i, sys := range systems {
		if errs[i] != nil {
			failures = append(failures, sourceError(sys.Name, errs[i]))
			continue
		}
		sources = append(sources, sys.Name)
		ok = append(ok, i)
	}
	return sources, failures, ok
}

// tagged is the patients found by the systems ok, each with its system's
// name as Source.
func tagged(systems []System, found [][]Patient, ok []int) []Patient {
	var all []Patient
	for _, i := range ok {
		for _, p := range found[i] {
			p.Source = systems[i].Name
			all = append(all, p)
		}
	}
	return all
}

// findPeople asks every system q at once: each one's patients, or its
// failure.
func findPeople(ctx context.Context, systems []System, q PatientQuery) ([][]Patient, []error) {
	found := make([][]Patient, len(systems))
	errs := make([]error, len(systems))
	var wg sync.WaitGroup
	for i, sys := range systems {
		wg.Go(func() { found[i], errs[i] = sys.Patients.SearchPatients(ctx, q) })
	}
	wg.Wait()
	return found, errs
}

func sourceError(name string, err error) SourceError {
	var e *core.Error
	if errors.As(err, &e) && e.Kind != core.KindInternal {
		return SourceError{Source: name, Code: e.Code, Message: e.Message}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return SourceError{Source: name, Code: "ehr_timeout", Message: name + " did not answer in time"}
	}
	return SourceError{Source: name, Code: "ehr_error", Message: name + " failed"}
}

// cacheKey scopes a cache entry to the caller (scoped by its acting
// business), the normalised request and
// the systems asked (so that an answer of other systems, before a reload of
// the EHR systems file, is not served); the page is not part of it, as every
// page is cut from the same list.
func (s *Service) cacheKey(subject string, v validated, systems []System) string {
	q := v.query
	names := make([]string, len(systems))
	for i, sys := range systems {
		names[i] = sys.Name
	}
	norm := strings.Join([]string{
		v.searchType, string(v.recordType), dayKey(v.from), dayKey(v.to), v.location, strings.Join(names, "\x01"),
		strings.ToLower(strings.Join(strings.Fields(q.Text), " ")),
		strings.ToLower(q.Family), strings.ToLower(q.Given), q.BirthDate, q.Gender,
		q.Identifier, q.Phone, dateKey(q.UpdatedFrom), dateKey(q.UpdatedTo),
	}, "\x00")
	return cacheKeyPrefix + keyed(s.cfg.KeyKey, subject+"\x01"+norm)
}

// keyed is the HMAC-SHA256 of s under key, half of it in hex.
func keyed(key []byte, s string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func dateKey(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.DateOnly)
}

func dayKey(d Date) string {
	if !d.valid() {
		return ""
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day)
}
