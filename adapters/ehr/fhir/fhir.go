// Package fhir is the FHIR R4 (REST) adapter of the EHR core: it turns an
// ehr.PatientQuery into Patient search parameters, follows the Bundle's
// paging links and converts Patient resources into ehr.Patient. Scheduler
// (scheduler.go) implements ehr.Scheduler over Practitioner,
// PractitionerRole, Schedule, Slot and Appointment through the same Doer.
// FHIR types never leave the package; upstream failures become *core.Error.
package fhir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// Doer sends requests to one EHR (ehrhttp.Client implements it).
type Doer interface {
	// Name is the EHR system's name, as errors and records show it.
	Name() string
	// URL is the absolute URL of path (relative to the EHR's base URL) with
	// query.
	URL(path string, query url.Values) string
	// Do sends req and returns the final response for any HTTP status; it
	// fails (with a *core.Error) only when no answer came, and refuses URLs
	// on other hosts than the EHR's.
	Do(ctx context.Context, req *http.Request) (*http.Response, error)
}

const (
	// DefaultSearchEndpoint is the Patient search path when the EHR
	// systems file names none.
	DefaultSearchEndpoint = "/Patient"
	// MaxPageSize is the largest _count asked for one page.
	MaxPageSize = 100
	// MaxPages bounds the pages fetched for one search.
	MaxPages = 20
	// MaxBodyBytes bounds one response body.
	MaxBodyBytes = 10 << 20
	// maxErrorBody bounds the body of a failed request that is read for
	// its OperationOutcome.
	maxErrorBody = 1 << 20
	// maxDetail bounds the upstream text quoted in an error message.
	maxDetail = 300
	// contentType is what a FHIR R4 server is asked to answer.
	contentType = "application/fhir+json"
)

// Client searches the patients of one FHIR R4 server.
type Client struct {
	http     Doer
	endpoint string
}

var _ ehr.PatientSearcher = (*Client)(nil)

// New returns a Client that sends its requests through doer to
// searchEndpoint (DefaultSearchEndpoint when empty).
func New(doer Doer, searchEndpoint string) *Client {
	if strings.TrimSpace(searchEndpoint) == "" {
		searchEndpoint = DefaultSearchEndpoint
	}
	return &Client{http: doer, endpoint: searchEndpoint}
}

// SearchPatients runs q against the server and returns at most q.Max
// patients (MaxPageSize when q.Max is not positive), following the
// Bundle's next links for at most MaxPages pages. The result is never nil
// when err is nil.
func (c *Client) SearchPatients(ctx context.Context, q ehr.PatientQuery) ([]ehr.Patient, error) {
	limit := q.Max
	if limit <= 0 {
		limit = MaxPageSize
	}
	target := c.http.URL(c.endpoint, params(q, min(limit, MaxPageSize)))
	out := []ehr.Patient{}
	seenPatient := make(map[string]bool)
	seenPage := make(map[string]bool)
	for range MaxPages {
		if err := ctx.Err(); err != nil {
			return nil, c.contextError(err)
		}
		seenPage[target] = true
		pg, base, err := c.fetch(ctx, target)
		if err != nil {
			return nil, err
		}
		for _, p := range pg.patients {
			if p.ID != "" {
				if seenPatient[p.ID] {
					continue // the same record on two pages
				}
				seenPatient[p.ID] = true
			}
			out = append(out, p)
			if len(out) >= limit {
				return out, nil
			}
		}
		if pg.next == "" {
			return out, nil
		}
		next, err := resolveNext(base, pg.next)
		if err != nil {
			return nil, c.badResponse("its next link is not a valid URL", err)
		}
		target = next
		if seenPage[target] {
			return out, nil // a link loop: what we have is all there is
		}
	}
	return out, nil
}

// resolveNext resolves a Bundle's next link against the URL of the page
// that carried it; only an http or https URL is accepted. The Doer refuses
// one on another host.
func resolveNext(base *url.URL, link string) (string, error) {
	next, err := base.Parse(link)
	if err != nil {
		return "", err
	}
	if next.Scheme != "http" && next.Scheme != "https" {
		return "", fmt.Errorf("scheme %q", clipN(next.Scheme, 16))
	}
	return next.String(), nil
}

// params turns q into FHIR Patient search parameters.
func params(q ehr.PatientQuery, count int) url.Values {
	v := url.Values{}
	set := func(key, value string) {
		if value = strings.TrimSpace(value); value != "" {
			v.Set(key, value)
		}
	}
	// Each word of free text is its own name parameter: FHIR matches a
	// name value against the start of one name part, and repeated
	// parameters must all match ("Ana Lopez" → name=Ana&name=Lopez).
	for _, word := range strings.Fields(q.Text) {
		v.Add("name", word)
	}
	set("family", q.Family)
	set("given", q.Given)
	set("birthdate", q.BirthDate) // no prefix: eq
	set("gender", q.Gender)
	set("identifier", q.Identifier) // system|value passes through
	set("phone", q.Phone)
	if !q.UpdatedFrom.IsZero() {
		v.Add("_lastUpdated", "ge"+q.UpdatedFrom.Format(time.DateOnly))
	}
	if !q.UpdatedTo.IsZero() {
		v.Add("_lastUpdated", "le"+q.UpdatedTo.Format(time.DateOnly))
	}
	v.Set("_count", strconv.Itoa(count))
	return v
}

// fetch GETs one search page and decodes it; base is the URL the page came
// from, against which a relative next link resolves.
func (c *Client) fetch(ctx context.Context, target string) (page, *url.URL, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return page{}, nil, c.upstream("ehr_error", "has an invalid search URL", err)
	}
	req.Header.Set("Accept", contentType)
	resp, body, err := c.exchange(ctx, req)
	if err != nil {
		var de *decodeError
		if errors.As(err, &de) {
			return page{}, nil, c.badResponse(de.msg, de.err)
		}
		return page{}, nil, err
	}
	pg, err := decodeBundle(body, c.http.Name())
	if err != nil {
		var de *decodeError
		if errors.As(err, &de) {
			return page{}, nil, c.badResponse(de.msg, de.err)
		}
		return page{}, nil, c.badResponse("it could not be decoded", err)
	}
	base := req.URL
	if resp.Request != nil && resp.Request.URL != nil {
		base = resp.Request.URL // after redirects
	}
	return pg, base, nil
}

// exchange sends req through the Doer and reads the whole answer. A 2xx
// answer comes back with its body (at most MaxBodyBytes; a larger one is a
// *decodeError). Any other status is a *core.Error from statusError, with
// resp (its body closed) so the caller can look at the status. Failures
// without an answer are *core.Error. The scheduler shares it with fetch.
func (c *Client) exchange(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	resp, err := c.http.Do(ctx, req)
	if err != nil {
		var ce *core.Error
		if errors.As(err, &ce) {
			return nil, nil, err
		}
		if ctx.Err() != nil {
			return nil, nil, c.contextError(ctx.Err())
		}
		return nil, nil, c.upstream("ehr_error", "did not answer", err)
	}
	if resp == nil || resp.Body == nil {
		return nil, nil, c.upstream("ehr_error", "sent no answer", nil)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
		if err != nil || len(body) > maxErrorBody {
			body = nil // the status alone tells
		}
		return resp, body, c.statusError(resp, body)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, c.contextError(ctx.Err())
		}
		return nil, nil, c.upstream("ehr_error", "broke off its answer", err)
	}
	if len(body) > MaxBodyBytes {
		return nil, nil, &decodeError{fmt.Sprintf("it exceeds %d MiB", MaxBodyBytes>>20), nil}
	}
	return resp, body, nil
}

// do sends one request (with body as application/fhir+json when not nil,
// replayable by the Doer's retries) and returns the answer as exchange
// does: on a non-2xx status a *core.Error with resp to look at.
func (c *Client) do(ctx context.Context, method, target string, body []byte, hdr map[string]string) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, nil, c.upstream("ehr_error", "has an invalid URL", err)
	}
	req.Header.Set("Accept", contentType)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, out, err := c.exchange(ctx, req)
	if err != nil {
		var de *decodeError
		if errors.As(err, &de) {
			return nil, nil, c.bad(de.msg, de.err)
		}
		return resp, nil, err
	}
	return resp, out, nil
}

// bad is an ehr_bad_response error: the answer was not what FHIR says.
func (c *Client) bad(what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_bad_response",
		Message: c.http.Name() + " sent an invalid answer: " + what, Err: cause}
}

// badDecode is bad for a body that did not decode (a *decodeError keeps
// its message).
func (c *Client) badDecode(err error) *core.Error {
	var de *decodeError
	if errors.As(err, &de) {
		return c.bad(de.msg, de.err)
	}
	return c.bad("it could not be decoded", err)
}

// statusError turns a non-2xx answer into a *core.Error that quotes the
// OperationOutcome's text, if the body holds one.
func (c *Client) statusError(resp *http.Response, body []byte) *core.Error {
	kind, code := core.KindBadGateway, "ehr_error"
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		code = "ehr_unauthorized"
	case http.StatusTooManyRequests:
		kind, code = core.KindRateLimited, "rate_limited"
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		kind, code = core.KindTimeout, "ehr_timeout"
	}
	msg := fmt.Sprintf("%s answered HTTP %d", c.http.Name(), resp.StatusCode)
	if detail := outcomeText(body); detail != "" {
		msg += ": " + detail
	}
	e := &core.Error{Kind: kind, Code: code, Message: msg}
	if kind == core.KindRateLimited {
		e.RetryAfter, _ = ehrhttp.RetryAfter(resp.Header.Get("Retry-After"), time.Now()) // 0: unsaid
	}
	return e
}

func (c *Client) upstream(code, what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: code,
		Message: c.http.Name() + " " + what, Err: cause}
}

func (c *Client) badResponse(what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_bad_response",
		Message: c.http.Name() + " sent an invalid search answer: " + what, Err: cause}
}

func (c *Client) contextError(err error) *core.Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout",
			Message: c.http.Name() + " did not answer in time", Err: err}
	}
	return c.upstream("ehr_error", "was not searched: the search was cancelled", err)
}

// clip makes upstream text fit for an error message.
func clip(s string) string { return ehr.ClipText(s, maxDetail) }
