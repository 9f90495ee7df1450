package fhirtest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// Front starts a server in front of s for the test: each request goes to
// h with next, a proxy to s; h passes it on (next.ServeHTTP), counts it,
// holds it or answers it itself. It returns the front's FHIR base, as URL
// is s's.
func (s *Server) Front(t testing.TB, h func(w http.ResponseWriter, r *http.Request, next http.Handler)) string {
	t.Helper()
	target, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	base := target.Path
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, proxy) }))
	t.Cleanup(front.Close)
	return front.URL + base
}
