package oidctest_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/carebridge/carebridge/test/oidctest"
)

func getJSON(t *testing.T, iss *oidctest.Issuer, path string, v any) {
	t.Helper()
	resp, err := iss.Client().Get(iss.URL() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
}

func jwks(t *testing.T, iss *oidctest.Issuer) jose.JSONWebKeySet {
	t.Helper()
	var set jose.JSONWebKeySet
	getJSON(t, iss, oidctest.JWKSPath, &set)
	return set
}

func kids(set jose.JSONWebKeySet) []string {
	var out []string
	for _, k := range set.Keys {
		out = append(out, k.KeyID)
	}
	return out
}

func TestIssuer_ServesDiscoveryDocument(t *testing.T) {
	iss := oidctest.New(t)
	var doc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	getJSON(t, iss, oidctest.DiscoveryPath, &doc)
	if doc.Issuer != iss.URL() || doc.JWKSURI != iss.URL()+oidctest.JWKSPath || !slices.Equal(doc.Algs, []string{"RS256"}) {
		t.Fatalf("discovery = %+v", doc)
	}
}

func TestIssuer_TokenVerifiesWithPublishedKey(t *testing.T) {
	iss := oidctest.New(t)
	tok := iss.Token(t, "user-1", "aud-1", time.Minute)

	jws, err := jose.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if got := jws.Signatures[0].Header.KeyID; got != iss.KeyID() {
		t.Fatalf("kid = %q, want %q", got, iss.KeyID())
	}
	set := jwks(t, iss)
	keys := set.Key(iss.KeyID())
	if len(keys) != 1 {
		t.Fatalf("JWKS has %d keys with kid %q", len(keys), iss.KeyID())
	}
	payload, err := jws.Verify(keys[0])
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if claims["iss"] != iss.URL() || claims["sub"] != "user-1" || claims["aud"] != "aud-1" {
		t.Fatalf("claims = %v", claims)
	}
	if iss.JWKSRequests() != 1 {
		t.Fatalf("JWKSRequests = %d, want 1", iss.JWKSRequests())
	}
}

func TestIssuer_RotateKeepsOldKeyUntilRetired(t *testing.T) {
	iss := oidctest.New(t)
	oldKid := iss.KeyID()
	iss.Rotate(t)
	newKid := iss.KeyID()
	if newKid == oldKid {
		t.Fatal("Rotate kept the same kid")
	}
	if got := kids(jwks(t, iss)); !slices.Equal(got, []string{oldKid, newKid}) {
		t.Fatalf("JWKS kids after Rotate = %v", got)
	}
	iss.RetireOldKeys()
	if got := kids(jwks(t, iss)); !slices.Equal(got, []string{newKid}) {
		t.Fatalf("JWKS kids after RetireOldKeys = %v", got)
	}
}

func TestIssuer_SignWithProducesForgeries(t *testing.T) {
	iss := oidctest.New(t)
	claims := iss.Claims("user-1", "aud-1", time.Minute)
	tests := []struct {
		forgery oidctest.Forgery
		alg     string
	}{
		{oidctest.AlgNone, `"alg":"none"`},
		{oidctest.HS256PublicKey, `"alg":"HS256"`},
		{oidctest.UnknownKey, `"alg":"RS256"`},
	}
	for _, tt := range tests {
		t.Run(tt.forgery.String(), func(t *testing.T) {
			tok := iss.SignWith(t, tt.forgery, claims)
			parts := strings.Split(tok, ".")
			if len(parts) != 3 {
				t.Fatalf("token has %d parts", len(parts))
			}
			rawHeader, err := base64.RawURLEncoding.DecodeString(parts[0])
			if err != nil || !strings.Contains(string(rawHeader), tt.alg) {
				t.Fatalf("header = %s (%v), want %s", rawHeader, err, tt.alg)
			}
			header, err := jose.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
			if tt.forgery != oidctest.UnknownKey {
				if err == nil {
					t.Fatalf("RS256-only parse accepted %s", tt.alg)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if _, err := header.Verify(jwks(t, iss).Keys[0]); err == nil {
				t.Fatal("token signed by the unknown key verified with the published key")
			}
		})
	}
}
