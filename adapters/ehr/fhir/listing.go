package fhir

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// MaxScan bounds the resources one search reads when it walks every page
// (a scheduler listing with a filter the server cannot apply, the slots
// and appointments of a calendar, a person's clinical records). A search that matches more is
// answered as an error (code ehr_listing_inexact), never cut short.
const MaxScan = 10_000

// maxScanPages bounds the pages of one search (a server that sends few
// resources a page, or pages without end).
const maxScanPages = 500

// Codes of the upstream errors of a paged search (all KindBadGateway).
const (
	// CodeListingInexact: the listing cannot be answered exactly (more
	// matches than MaxScan to filter in the adapter).
	CodeListingInexact = "ehr_listing_inexact"
	// CodePagingForeignHost: a next link points to another host.
	CodePagingForeignHost = "ehr_paging_foreign_host"
	// CodePagingLoop: a next link leads back to a page already read, or a
	// page without entries links to a next one.
	CodePagingLoop = "ehr_paging_loop"
	// CodePagingRepeat: a resource came twice in the matches of a search.
	CodePagingRepeat = "ehr_paging_repeat"
	// CodeTotalMismatch: Bundle.total disagrees with the entries.
	CodeTotalMismatch = "ehr_total_mismatch"
)

// The paged search below is the Client's, so that the patient search's
// neighbours — the Scheduler's listings and SearchRecords — share one
// walk of the pages, its bounds and its errors.

// paging is an upstream error of a paged search (code as above).
func (c *Client) paging(code, what string) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: code, Message: c.http.Name() + " " + what}
}

// searchPages GETs typ?q and follows the Bundle's next links (on the
// host of the first request only), handing each page's total and resource
// entries (OperationOutcome entries left out) to page, until page returns
// false or there is no next link. A next link back to a page already read,
// or a page without entries that links to another, is an error; so is a
// next link to another host. It returns the HTTP status of an answer that
// failed (0 for other failures).
//
// With ahead, for a walk that reads to the end, the next page is asked for
// as soon as its link is read, while page works on this one, so the work
// on a page is not added to the walk's time once a page; when page stops
// the walk (false or an error) that request is cancelled, so one more
// request than needed may have reached the server. Without ahead (a walk
// page may stop early) each page is asked for after page returned. Either
// way an error of page wins over one of the next link.
func (c *Client) searchPages(ctx context.Context, typ string, q url.Values, ahead bool,
	page func(b bundle, entries []entry) (bool, error)) (int, error) {
	target := c.http.URL("/"+typ, q)
	first, err := url.Parse(target)
	if err != nil {
		return 0, c.upstream("ehr_error", "has an invalid URL", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a request asked ahead that is no longer wanted
	w := &pageWalk{c: c, typ: typ, first: first, seen: map[string]bool{target: true}}
	pending := c.fetchPage(ctx, target)
	for {
		f := <-pending
		if f.err != nil {
			if err := ctx.Err(); err != nil {
				return 0, c.contextError(err)
			}
			if f.resp != nil {
				return f.resp.StatusCode, f.err
			}
			return 0, f.err
		}
		b, err := readBundle(f.body)
		if err != nil {
			return 0, c.badDecode(err)
		}
		b.date = answeredAt(f.resp)
		next, nextErr := w.next(f.resp, f.target, b)
		if next != "" && ahead {
			pending = c.fetchPage(ctx, next)
		}
		entries, err := c.entries(b)
		if err != nil {
			return 0, err
		}
		more, err := page(b, entries)
		if err != nil || !more {
			return 0, err
		}
		if nextErr != nil || next == "" {
			return 0, nextErr
		}
		if !ahead {
			pending = c.fetchPage(ctx, next)
		}
	}
}

// answeredAt is the server's clock when it sent resp: its Date header
// (RFC 9110: to the second), or zero when it sent none or an invalid one.
func answeredAt(resp *http.Response) time.Time {
	if resp == nil {
		return time.Time{}
	}
	t, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// fetched is the answer to one page's request.
type fetched struct {
	target string
	resp   *http.Response
	body   []byte
	err    error
}

// fetchPage GETs target on its own goroutine; the channel gets its answer.
func (c *Client) fetchPage(ctx context.Context, target string) <-chan fetched {
	out := make(chan fetched, 1)
	go func() {
		resp, body, err := c.do(ctx, http.MethodGet, target, nil, nil)
		out <- fetched{target: target, resp: resp, body: body, err: err}
	}()
	return out
}

// pageWalk is the state of one searchPages walk that its bounds need.
type pageWalk struct {
	c     *Client
	typ   string
	first *url.URL
	seen  map[string]bool // the pages asked for
	pages int
}

// next is the page after b (the page target, answered by resp): "" with
// no error when b is the last; an error when the link breaks a bound.
func (w *pageWalk) next(resp *http.Response, target string, b bundle) (string, error) {
	link := b.next()
	if link == "" {
		return "", nil
	}
	if w.pages++; w.pages >= maxScanPages {
		return "", w.c.paging(CodeListingInexact, fmt.Sprintf("needs more than %d pages for this %s search; narrow the filter", maxScanPages, w.typ))
	}
	if len(b.Entry) == 0 {
		return "", w.c.paging(CodePagingLoop, "answered a search page without entries that links to a next page")
	}
	next, err := w.c.nextTarget(resp, target, link, w.first)
	if err != nil {
		return "", err
	}
	if w.seen[next] {
		return "", w.c.paging(CodePagingLoop, fmt.Sprintf("sent a next link back to a %s page already read", w.typ))
	}
	w.seen[next] = true
	return next, nil
}

// nextTarget resolves the next link of the page target (answered by resp,
// after redirects) and refuses one to another host than first's.
func (c *Client) nextTarget(resp *http.Response, target, next string, first *url.URL) (string, error) {
	base, err := url.Parse(target)
	if resp.Request != nil && resp.Request.URL != nil {
		base, err = resp.Request.URL, nil // after redirects
	}
	if err != nil {
		return "", c.bad("its page URL is not valid", err)
	}
	if target, err = resolveNext(base, next); err != nil {
		return "", c.bad("its next link is not a valid URL", err)
	}
	if u, err := url.Parse(target); err != nil || u.Scheme != first.Scheme || u.Host != first.Host {
		return "", c.paging(CodePagingForeignHost, "sent a next link to another host; it is not followed")
	}
	return target, nil
}

// searchAll reads every page of typ?q, handing each resource entry to
// visit. The search is exact or an error: more than MaxScan matches (by
// Bundle.total or by count) is CodeListingInexact, a match that comes
// twice CodePagingRepeat, and a Bundle.total other than the matches read
// CodeTotalMismatch. It returns the HTTP status of an answer that failed
// (0 for other failures).
func (c *Client) searchAll(ctx context.Context, typ string, q url.Values, visit func(entry) error) (int, error) {
	seen := map[string]bool{}
	var total *int
	status, err := c.searchPages(ctx, typ, q, true, func(b bundle, entries []entry) (bool, error) {
		if t := b.Total; total == nil && t != nil {
			if *t > MaxScan {
				return false, c.tooLarge(typ, *t)
			}
			total = t
		} else if total != nil && t != nil && *t != *total {
			return false, c.paging(CodeTotalMismatch, fmt.Sprintf("changed the total of a %s search from %d to %d between pages", typ, *total, *t))
		}
		for _, e := range entries {
			if e.matched() && e.typ == typ && e.id != "" {
				if seen[e.id] {
					return false, c.paging(CodePagingRepeat, fmt.Sprintf("sent %s %s twice in one search", typ, clipN(e.id, 64)))
				}
				if seen[e.id] = true; len(seen) > MaxScan {
					return false, c.tooLarge(typ, len(seen))
				}
			}
			if err := visit(e); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return status, err
	}
	if total != nil && *total != len(seen) {
		return 0, c.paging(CodeTotalMismatch, fmt.Sprintf("gave a %s search a total of %d but sent %d matches", typ, *total, len(seen)))
	}
	return 0, nil
}

func (c *Client) tooLarge(typ string, n int) *core.Error {
	return c.paging(CodeListingInexact, fmt.Sprintf("holds %d %s resources for this listing; with this filter at most %d can be listed exactly: narrow it", n, typ, MaxScan))
}

// searchPage asks the server for one page of typ?q — limit matches from
// offset, with _count, _offset and _total=accurate — following next links
// while the server sends fewer matches a page than asked, and hands each
// entry of it to visit. ok is false, and nothing is wrong, when the server
// does not answer that way (no Bundle.total, or more matches than asked):
// the caller then lists by searchAll. A total that changes between pages
// or disagrees with the matches sent, or a match sent twice, is an error.
func (c *Client) searchPage(ctx context.Context, typ string, q url.Values, offset, limit int,
	visit func(entry) error) (total int, ok bool, status int, err error) {
	pq := url.Values{}
	for k, v := range q {
		pq[k] = v
	}
	pq.Set("_count", strconv.Itoa(limit))
	pq.Set("_offset", strconv.Itoa(offset))
	pq.Set("_total", "accurate")
	seen := map[string]bool{}
	first := true
	status, err = c.searchPages(ctx, typ, pq, false, func(b bundle, entries []entry) (bool, error) {
		t := b.Total
		if first {
			first = false
			if t == nil || *t < 0 || !applied(b, q) {
				return false, nil
			}
			total, ok = *t, true
		} else if t != nil && *t != total {
			return false, c.paging(CodeTotalMismatch, fmt.Sprintf("changed the total of a %s search from %d to %d between pages", typ, total, *t))
		}
		n := 0
		for _, e := range entries {
			if e.matched() && e.typ == typ {
				n++
			}
		}
		if len(seen) == 0 && n > limit {
			ok = false // it ignores _count (and so, likely, _offset)
			return false, nil
		}
		for _, e := range entries {
			if e.matched() && e.typ == typ {
				if len(seen) == limit {
					continue // a later page of the server's size: the rest is the next page's
				}
				if seen[e.id] {
					return false, c.paging(CodePagingRepeat, fmt.Sprintf("sent %s %s twice in one page", typ, clipN(e.id, 64)))
				}
				seen[e.id] = true
			}
			if err := visit(e); err != nil {
				return false, err
			}
		}
		return len(seen) < limit, nil
	})
	if err != nil || !ok {
		return 0, false, status, err
	}
	if want := min(max(total-offset, 0), limit); len(seen) != want {
		return 0, false, 0, c.paging(CodeTotalMismatch, fmt.Sprintf(
			"gave a %s search a total of %d but sent %d matches from offset %d (%d expected)", typ, total, len(seen), offset, want))
	}
	return total, true, 0, nil
}

// applied reports whether the server applied every search parameter of
// q, by its self link: FHIR has the self link express the parameters the
// server actually used, and a server leaves out those it ignored. A bundle
// without a self link is taken at its word.
func applied(b bundle, q url.Values) bool {
	self := ""
	for _, l := range b.Link {
		if l.Relation == "self" {
			self = strings.TrimSpace(l.URL)
		}
	}
	if self == "" {
		return true
	}
	u, err := url.Parse(self)
	if err != nil {
		return false
	}
	used := u.Query()
	for k, vs := range q {
		if strings.HasPrefix(k, "_") {
			continue // paging and includes: checked by their answer
		}
		for _, v := range vs {
			if !slices.Contains(used[k], v) {
				return false
			}
		}
	}
	return true
}

// pageBounds returns page (1 when < 1) and limit (ehr's default when < 1,
// at most ehr.MaxLimit).
func pageBounds(page, limit int) (int, int) {
	if page < 1 {
		page = 1
	}
	if limit < 1 {
		limit = ehr.DefaultLimit
	}
	return page, min(limit, ehr.MaxLimit)
}

// paginate returns page of items (see pageBounds). Items is never nil.
func paginate[T any](items []T, page, limit int) ehr.Page[T] {
	page, limit = pageBounds(page, limit)
	out := ehr.Page[T]{Items: []T{}, TotalCount: len(items), Page: page, Limit: limit}
	if page-1 < (len(items)+limit-1)/limit {
		start := (page - 1) * limit
		out.Items = append(out.Items, items[start:min(start+limit, len(items))]...)
	}
	return out
}
