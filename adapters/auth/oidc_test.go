package auth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/auth"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/test/oidctest"
)

const audience = "carebridge-api"

func newOIDC(t *testing.T, iss *oidctest.Issuer, opts ...auth.Option) *auth.Verifier {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	v, err := auth.NewOIDC(ctx, iss.URL(), audience, opts...)
	if err != nil {
		t.Fatalf("NewOIDC: %v", err)
	}
	return v
}

// assertAuth checks Authenticate's result: the subject when wantCode is
// empty, otherwise a 401 core.Error with that code that does not echo the
// token.
func assertAuth(t *testing.T, v *auth.Verifier, token, wantSub, wantCode string) {
	t.Helper()
	actor, err := v.Authenticate(t.Context(), token)
	if wantCode == "" {
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if actor.Subject != wantSub {
			t.Fatalf("Subject = %q, want %q", actor.Subject, wantSub)
		}
		return
	}
	var e *core.Error
	if !errors.As(err, &e) {
		t.Fatalf("Authenticate error = %v (%T), want *core.Error %s", err, err, wantCode)
	}
	if e.Kind != core.KindUnauthenticated || e.Code != wantCode {
		t.Fatalf("Authenticate error = kind %d code %q (%v), want kind %d code %q",
			e.Kind, e.Code, err, core.KindUnauthenticated, wantCode)
	}
	t.Logf("refused: %v", err)
	if actor.Subject != "" || actor.Scopes != nil {
		t.Fatalf("Authenticate returned actor %+v with an error", actor)
	}
	if token = strings.TrimSpace(token); len(token) > 8 {
		if strings.Contains(err.Error(), token) {
			t.Fatalf("error echoes the token: %v", err)
		}
		// No part of the token (header, claims, signature) leaks.
		for _, part := range strings.Split(token, ".") {
			if len(part) > 8 && strings.Contains(err.Error(), part) {
				t.Fatalf("error echoes a token segment: %v", err)
			}
		}
	}
}

func TestAuthenticate_OIDC(t *testing.T) {
	iss := oidctest.New(t)
	other := oidctest.New(t)
	v := newOIDC(t, iss)

	claims := func(edit func(c map[string]any)) map[string]any {
		c := iss.Claims("user-1", audience, time.Hour)
		edit(c)
		return c
	}
	now := time.Now()
	valid := iss.Token(t, "user-1", audience, time.Hour)

	tests := []struct {
		name     string
		token    string
		wantSub  string
		wantCode string
	}{
		{"valid RS256 token returns its subject", valid, "user-1", ""},
		{"surrounding white space is ignored", " \t" + valid + " \r\n", "user-1", ""},
		{"audience list containing ours is accepted",
			iss.Sign(t, claims(func(c map[string]any) { c["aud"] = []string{"other", audience} })), "user-1", ""},
		{"nbf within 30s skew is accepted",
			iss.Sign(t, claims(func(c map[string]any) { c["nbf"] = now.Add(20 * time.Second).Unix() })), "user-1", ""},
		{"no nbf is accepted",
			iss.Sign(t, claims(func(c map[string]any) { delete(c, "nbf") })), "user-1", ""},

		{"expired token is refused as expired", iss.Token(t, "user-1", audience, -time.Minute), "", "token_expired"},
		{"wrong audience is refused", iss.Token(t, "user-1", "someone-else", time.Hour), "", "invalid_token"},
		{"missing audience is refused",
			iss.Sign(t, claims(func(c map[string]any) { delete(c, "aud") })), "", "invalid_token"},
		{"wrong issuer is refused",
			iss.Sign(t, claims(func(c map[string]any) { c["iss"] = "https://evil.example" })), "", "invalid_token"},
		{"token of another issuer is refused", other.Token(t, "user-1", audience, time.Hour), "", "invalid_token"},
		{"token of another issuer claiming ours is refused",
			other.Sign(t, claims(func(map[string]any) {})), "", "invalid_token"},
		{"unknown signing key is refused",
			iss.SignWith(t, oidctest.UnknownKey, claims(func(map[string]any) {})), "", "invalid_token"},
		{"alg none is refused",
			iss.SignWith(t, oidctest.AlgNone, claims(func(map[string]any) {})), "", "invalid_token"},
		{"HS256 keyed with the public key is refused",
			iss.SignWith(t, oidctest.HS256PublicKey, claims(func(map[string]any) {})), "", "invalid_token"},
		{"missing sub is refused",
			iss.Sign(t, claims(func(c map[string]any) { delete(c, "sub") })), "", "invalid_token"},
		{"empty sub is refused", iss.Token(t, "", audience, time.Hour), "", "invalid_token"},
		{"blank sub is refused", iss.Token(t, "  ", audience, time.Hour), "", "invalid_token"},
		{"sub with control characters is refused", iss.Token(t, "user\n1", audience, time.Hour), "", "invalid_token"},
		{"sub longer than 255 bytes is refused",
			iss.Token(t, strings.Repeat("u", 256), audience, time.Hour), "", "invalid_token"},
		{"nbf 10 minutes ahead is refused",
			iss.Sign(t, claims(func(c map[string]any) { c["nbf"] = now.Add(10 * time.Minute).Unix() })), "", "invalid_token"},
		{"nbf 2 minutes ahead is refused (go-oidc alone allows 5)",
			iss.Sign(t, claims(func(c map[string]any) { c["nbf"] = now.Add(2 * time.Minute).Unix() })), "", "invalid_token"},
		{"huge nbf is refused",
			iss.Sign(t, claims(func(c map[string]any) { c["nbf"] = 1e300 })), "", "invalid_token"},
		{"missing exp is refused",
			iss.Sign(t, claims(func(c map[string]any) { delete(c, "exp") })), "", "invalid_token"},
		{"string exp is refused",
			iss.Sign(t, claims(func(c map[string]any) { c["exp"] = "tomorrow" })), "", "invalid_token"},
		{"white space inside the token is refused",
			strings.Replace(valid, ".", ". ", 1), "", "invalid_token"},
		{"tampered payload is refused", tamper(t, valid), "", "invalid_token"},
		{"garbage is refused", "not-a-jwt", "", "invalid_token"},
		{"three garbage segments are refused", "aaaa.bbbb.cccc", "", "invalid_token"},
		{"empty token is refused", "", "", "invalid_token"},
		{"blank token is refused", "   ", "", "invalid_token"},
		{"oversized token is refused", valid + strings.Repeat("A", 40<<10), "", "invalid_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertAuth(t, v, tt.token, tt.wantSub, tt.wantCode)
		})
	}
}

// tamper changes the subject in the payload of a signed token and keeps
// the signature.
func tamper(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(payload), `"sub":"user-1"`, `"sub":"admin"`, 1)
	if changed == string(payload) {
		t.Fatalf("payload %s has no sub user-1", payload)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(changed))
	return strings.Join(parts, ".")
}

func TestAuthenticate_OIDC_FollowsKeyRotation(t *testing.T) {
	iss := oidctest.New(t)
	v := newOIDC(t, iss, auth.WithCacheTTL(0)) // every token checked against the keys

	before := iss.Token(t, "user-1", audience, time.Hour)
	assertAuth(t, v, before, "user-1", "")
	fetches := iss.JWKSRequests()

	iss.Rotate(t)
	after := iss.Token(t, "user-2", audience, time.Hour)
	assertAuth(t, v, after, "user-2", "")
	if got := iss.JWKSRequests(); got != fetches+1 {
		t.Fatalf("JWKS fetched %d times after rotation, want %d (one refetch for the new kid)", got, fetches+1)
	}
	assertAuth(t, v, before, "user-1", "") // old key still published

	// The old key is retired; once a new kid makes the verifier refetch, the
	// old key is gone from its cache too. go-oidc hands the fetched keys to
	// the waiting request a moment before it stores them in its cache, so
	// the refusal is awaited briefly.
	iss.Rotate(t)
	iss.RetireOldKeys()
	assertAuth(t, v, iss.Token(t, "user-3", audience, time.Hour), "user-3", "")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := v.Authenticate(t.Context(), before); err != nil || time.Now().After(deadline) {
			break
		}
	}
	assertAuth(t, v, before, "", "invalid_token")
}

func TestAuthenticate_VerifiedTokenIsTrustedFromTheCache(t *testing.T) {
	iss := oidctest.New(t)
	v := newOIDC(t, iss)
	tok := iss.Token(t, "user-1", audience, time.Hour)
	assertAuth(t, v, tok, "user-1", "")
	// The issuer retires the key, and the verifier learns of it; within the
	// cache TTL the verified token is still trusted (see cache_test.go for
	// the TTL and expiry bounds).
	iss.Rotate(t)
	iss.RetireOldKeys()
	assertAuth(t, v, iss.Token(t, "user-2", audience, time.Hour), "user-2", "")
	assertAuth(t, v, tok, "user-1", "")
}

func TestAuthenticate_OIDC_CachesKeys(t *testing.T) {
	iss := oidctest.New(t)
	v := newOIDC(t, iss)
	for range 3 {
		assertAuth(t, v, iss.Token(t, "user-1", audience, time.Hour), "user-1", "")
	}
	if got := iss.JWKSRequests(); got != 1 {
		t.Fatalf("JWKS fetched %d times for 3 tokens, want 1", got)
	}
}

func TestAuthenticate_OIDC_UsesClock(t *testing.T) {
	iss := oidctest.New(t)
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	v := newOIDC(t, iss, auth.WithClock(later))
	assertAuth(t, v, iss.Token(t, "user-1", audience, time.Hour), "", "token_expired")
}

func TestNewOIDC_RejectsBadConfiguration(t *testing.T) {
	iss := oidctest.New(t)
	tests := []struct {
		name, issuer, audience, wantErr string
	}{
		{"empty issuer", "", audience, "issuer URL is empty"},
		{"relative issuer", "issuer.example", audience, "not an absolute http(s) URL"},
		{"non-http issuer", "ftp://issuer.example", audience, "not an absolute http(s) URL"},
		{"empty audience", iss.URL(), "", "audience is empty"},
		{"issuer differing from discovery", iss.URL() + "/", audience, "did not match"},
		{"no discovery document", iss.URL() + "/nowhere", audience, "404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := auth.NewOIDC(t.Context(), tt.issuer, tt.audience)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewOIDC = %v, %v; want error containing %q", v, err, tt.wantErr)
			}
		})
	}
}

func TestNewOIDC_FailsClearlyWhenIssuerIsDown(t *testing.T) {
	iss := oidctest.New(t)
	url := iss.URL()
	// A closed server: the address refuses connections.
	down := oidctest.New(t)
	downURL := down.URL()
	down.Close()

	_, err := auth.NewOIDC(t.Context(), downURL, audience)
	if err == nil || !strings.Contains(err.Error(), "oidc discovery for issuer") || !strings.Contains(err.Error(), downURL) {
		t.Fatalf("NewOIDC(down issuer) error = %v, want one naming the issuer", err)
	}
	if _, err := auth.NewOIDC(t.Context(), url, audience); err != nil {
		t.Fatalf("NewOIDC(up issuer): %v", err)
	}
}

func TestNewOIDC_HonoursContextDeadline(t *testing.T) {
	iss := oidctest.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := auth.NewOIDC(ctx, iss.URL(), audience); !errors.Is(err, context.Canceled) {
		t.Fatalf("NewOIDC(cancelled ctx) error = %v, want context.Canceled", err)
	}
}

// withKid is token with its header's kid replaced (its signature no longer
// checks out).
func withKid(t *testing.T, token, kid string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"` + kid + `","typ":"JWT"}`))
	return header + "." + parts[1] + "." + parts[2]
}

// Forged tokens do not become requests to the issuer: one a held key
// refuses costs none, and tokens naming keys the issuer does not have
// cost one per pause, not one each.
func TestAuthenticate_OIDC_ForgedTokensDoNotFetchKeysEachTime(t *testing.T) {
	iss := oidctest.New(t)
	clock := time.Now()
	v := newOIDC(t, iss, auth.WithCacheTTL(0), auth.WithClock(func() time.Time { return clock }))
	good := iss.Token(t, "user-1", audience, time.Hour)
	assertAuth(t, v, good, "user-1", "")
	fetches := iss.JWKSRequests()

	for range 50 {
		assertAuth(t, v, iss.SignWith(t, oidctest.UnknownKey, iss.Claims("user-1", audience, time.Hour)), "", "invalid_token")
		assertAuth(t, v, tamper(t, good), "", "invalid_token")
	}
	if got := iss.JWKSRequests(); got != fetches {
		t.Fatalf("%d JWKS requests for 100 tokens signed wrongly under a held key, want none", got-fetches)
	}
	for i := range 50 {
		assertAuth(t, v, withKid(t, good, fmt.Sprint("forged-", i)), "", "invalid_token")
	}
	if got := iss.JWKSRequests(); got != fetches+1 {
		t.Fatalf("%d JWKS requests for 50 tokens naming unknown keys, want 1 (then a pause)", got-fetches)
	}
	// After the pause a new key is looked for again: rotation still works.
	clock = clock.Add(time.Minute)
	iss.Rotate(t)
	assertAuth(t, v, iss.Token(t, "user-2", audience, 2*time.Hour), "user-2", "")
	if got := iss.JWKSRequests(); got != fetches+2 {
		t.Fatalf("%d JWKS requests, want 2", got-fetches)
	}
}
