package ehrhttp

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

func TestWithAuth_AddsTheCredentialsToACopy(t *testing.T) {
	a := newAuthenticator(AuthConfig{Type: AuthAPIKey, APIKey: "k1", APIKeyHeader: "x-key"}, nil, 0)
	var got string
	d := withAuth(a)(func(_ context.Context, r *http.Request) (*http.Response, error) {
		got = r.Header.Get("X-Key")
		return nil, nil
	})
	req, _ := http.NewRequest(http.MethodGet, "https://ehr.example/", nil)
	_, _ = d(context.Background(), req)
	if got != "k1" || req.Header.Get("X-Key") != "" {
		t.Errorf("sent %q, caller's request holds %q; want k1 on a copy only", got, req.Header.Get("X-Key"))
	}
}

func TestWithAuth_NoCredentialsIsAnAuthFailure(t *testing.T) {
	d := withAuth(failedAuth{errors.New("bad key")})(func(context.Context, *http.Request) (*http.Response, error) {
		t.Error("sent without credentials")
		return nil, nil
	})
	req, _ := http.NewRequest(http.MethodGet, "https://ehr.example/", nil)
	if _, err := d(context.Background(), req); asFailure(err) == nil || asFailure(err).kind != failAuth {
		t.Errorf("got %v, want a failAuth", err)
	}
}
