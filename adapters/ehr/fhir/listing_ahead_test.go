package fhir

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// pagesDoer sends requests to a test server as the EHR's HTTP client does.
type pagesDoer struct{ base *url.URL }

func (d pagesDoer) Name() string { return "clinic-a" }
func (d pagesDoer) URL(path string, q url.Values) string {
	return d.base.String() + path + "?" + q.Encode()
}
func (d pagesDoer) Do(ctx context.Context, req *http.Request) (*http.Response, error) {
	return http.DefaultClient.Do(req.WithContext(ctx))
}

// threePages serves Observation pages 1–3 (page=N), one entry each, and
// counts the requests of each page.
func threePages(t *testing.T) (*Client, *[4]atomic.Int32) {
	var asked [4]atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if n < 1 || n > 3 {
			n = 1
		}
		asked[n].Add(1)
		next := ""
		if n < 3 {
			next = fmt.Sprintf(`,"link":[{"relation":"next","url":"http://%s/Observation?page=%d"}]`, r.Host, n+1)
		}
		w.Header().Set("Content-Type", "application/fhir+json")
		fmt.Fprintf(w, `{"resourceType":"Bundle","type":"searchset"%s,"entry":[{"search":{"mode":"match"},"resource":{"resourceType":"Observation","id":"o%d"}}]}`, next, n)
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL)
	return New(pagesDoer{base: base}, ""), &asked
}

// A walk to the end asks for the next page while its caller works on
// this one.
func TestSearchPages_AheadAsksForTheNextPageWhileThisOneIsRead(t *testing.T) {
	c, asked := threePages(t)
	var read []string
	_, err := c.searchPages(context.Background(), "Observation", url.Values{"page": {"1"}}, true, func(b bundle, entries []entry) (bool, error) {
		if b.next() != "" {
			n := len(read) + 2 // the next page
			deadline := time.Now().Add(10 * time.Second)
			for asked[n].Load() == 0 {
				if time.Now().After(deadline) {
					return false, fmt.Errorf("page %d was not asked for while page %d was read", n, n-1)
				}
				time.Sleep(time.Millisecond)
			}
		}
		for _, e := range entries {
			read = append(read, e.id)
		}
		return true, nil
	})
	if err != nil || fmt.Sprint(read) != "[o1 o2 o3]" {
		t.Fatalf("read %v, %v", read, err)
	}
}

// A walk that may stop early asks for no page it does not read.
func TestSearchPages_WithoutAheadAsksOnlyForThePagesRead(t *testing.T) {
	c, asked := threePages(t)
	pages := 0
	_, err := c.searchPages(context.Background(), "Observation", url.Values{"page": {"1"}}, false, func(bundle, []entry) (bool, error) {
		pages++
		return pages < 2, nil
	})
	if err != nil || pages != 2 || asked[1].Load() != 1 || asked[2].Load() != 1 || asked[3].Load() != 0 {
		t.Fatalf("pages %d, asked %d/%d/%d, %v", pages, asked[1].Load(), asked[2].Load(), asked[3].Load(), err)
	}
}
