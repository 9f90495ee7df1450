// Package oidctest runs an OpenID Connect issuer over real HTTP for tests.
//
// The issuer serves discovery (/.well-known/openid-configuration) and a JSON
// Web Key Set (/jwks) from an httptest.Server, and signs tokens with an
// RSA-2048 key (RS256, with a kid). Besides valid tokens it can forge the
// classic bad ones (alg none, HS256 keyed with the public key, a key that is
// not published) so negative tests need no JOSE code of their own.
//
//	iss := oidctest.New(t)
//	v, _ := auth.NewOIDC(ctx, iss.URL(), "carebridge")
//	tok := iss.Token(t, "user-1", "carebridge", time.Hour)
//
// An Issuer is safe for concurrent use.
package oidctest

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Paths served by the issuer, relative to URL().
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/jwks"
)

// Forgery selects how SignWith produces a token that a correct verifier must
// refuse.
type Forgery int

const (
	// AlgNone is an unsigned token: header alg "none" and an empty signature.
	AlgNone Forgery = iota + 1
	// HS256PublicKey is signed with HMAC-SHA256 keyed with the PEM encoding
	// (PKIX, "PUBLIC KEY") of the issuer's current public key: the
	// algorithm-confusion attack on verifiers that trust the token's alg.
	HS256PublicKey
	// UnknownKey is a well-formed RS256 token with the current kid, signed by
	// an RSA key that the issuer never publishes.
	UnknownKey
)

// String names the forgery, for test names.
func (f Forgery) String() string {
	switch f {
	case AlgNone:
		return "alg_none"
	case HS256PublicKey:
		return "hs256_public_key"
	case UnknownKey:
		return "unknown_key"
	default:
		return "forgery(?)"
	}
}

// Issuer is an OIDC issuer served over HTTP for the lifetime of a test.
type Issuer struct {
	srv *httptest.Server

	mu        sync.Mutex
	keys      []*rsaKey // published in the JWKS; the last one signs
	unknown   *rsaKey   // lazily created for UnknownKey
	jwksCalls int
}

type rsaKey struct {
	priv *rsa.PrivateKey
	kid  string
}

// New starts an issuer with one signing key. The server is closed when the
// test ends.
func New(t testing.TB) *Issuer {
	t.Helper()
	iss := &Issuer{keys: []*rsaKey{newRSAKey(t)}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+DiscoveryPath, iss.serveDiscovery)
	mux.HandleFunc("GET "+JWKSPath, iss.serveJWKS)
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

// URL is the issuer identifier: the server's base URL, without a trailing
// slash. It is the value of the "iss" claim in the tokens it signs.
func (i *Issuer) URL() string { return i.srv.URL }

// Close stops the server before the test ends, to simulate an issuer that
// is down. It is safe to call more than once.
func (i *Issuer) Close() { i.srv.Close() }

// Client returns an HTTP client that reaches the issuer.
func (i *Issuer) Client() *http.Client { return i.srv.Client() }

// JWKSRequests reports how many times the JWKS has been fetched.
func (i *Issuer) JWKSRequests() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.jwksCalls
}

// KeyID returns the kid of the current signing key.
func (i *Issuer) KeyID() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.current().kid
}

// Claims returns the standard claims of a valid token: iss, sub, aud, iat,
// nbf (now) and exp (now + ttl). Tests change or delete entries and pass the
// map to Sign.
func (i *Issuer) Claims(sub, audience string, ttl time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": i.URL(),
		"sub": sub,
		"aud": audience,
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(ttl).Unix(),
	}
}

// Token returns a valid RS256 token for sub and audience that expires after
// ttl (a negative ttl gives an expired token).
func (i *Issuer) Token(t testing.TB, sub, audience string, ttl time.Duration) string {
	t.Helper()
	return i.Sign(t, i.Claims(sub, audience, ttl))
}

// Sign signs arbitrary claims with the current key (RS256, typ JWT, kid of
// the key). Nothing is added or checked, so it also builds malformed tokens.
func (i *Issuer) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	i.mu.Lock()
	k := i.current()
	i.mu.Unlock()
	return signRS256(t, k, claims)
}

// SignWith returns claims signed the way f says; see Forgery.
func (i *Issuer) SignWith(t testing.TB, f Forgery, claims map[string]any) string {
	t.Helper()
	i.mu.Lock()
	cur := i.current()
	i.mu.Unlock()
	payload := mustJSON(t, claims)
	switch f {
	case AlgNone:
		header := mustJSON(t, map[string]any{"alg": "none", "typ": "JWT", "kid": cur.kid})
		return b64(header) + "." + b64(payload) + "."
	case HS256PublicKey:
		der, err := x509.MarshalPKIXPublicKey(&cur.priv.PublicKey)
		if err != nil {
			t.Fatalf("oidctest: marshal public key: %v", err)
		}
		secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		header := mustJSON(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": cur.kid})
		input := b64(header) + "." + b64(payload)
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(input))
		return input + "." + b64(mac.Sum(nil))
	case UnknownKey:
		i.mu.Lock()
		if i.unknown == nil {
			i.unknown = newRSAKey(t)
		}
		rogue := &rsaKey{priv: i.unknown.priv, kid: cur.kid}
		i.mu.Unlock()
		return signRS256(t, rogue, claims)
	default:
		t.Fatalf("oidctest: unknown forgery %d", f)
		return ""
	}
}

// Rotate creates a new signing key and makes it current. The previous keys
// stay published in the JWKS, as identity providers do during a rollover, so
// tokens they signed still verify; call RetireOldKeys to unpublish them.
func (i *Issuer) Rotate(t testing.TB) {
	t.Helper()
	k := newRSAKey(t)
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keys = append(i.keys, k)
}

// RetireOldKeys removes every key but the current one from the JWKS.
// Verifiers that cached the old keys keep them until they refetch the set.
func (i *Issuer) RetireOldKeys() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keys = []*rsaKey{i.current()}
}

// current is the signing key; i.mu must be held.
func (i *Issuer) current() *rsaKey { return i.keys[len(i.keys)-1] }

func (i *Issuer) serveDiscovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"issuer":                                i.URL(),
		"jwks_uri":                              i.URL() + JWKSPath,
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
	})
}

func (i *Issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	i.mu.Lock()
	i.jwksCalls++
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(i.keys))}
	for _, k := range i.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{
			Key:       &k.priv.PublicKey,
			KeyID:     k.kid,
			Algorithm: string(jose.RS256),
			Use:       "sig",
		})
	}
	i.mu.Unlock()
	writeJSON(w, set)
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func newRSAKey(t testing.TB) *rsaKey {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("oidctest: generate RSA key: %v", err)
	}
	jwk := jose.JSONWebKey{Key: &priv.PublicKey}
	thumb, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatalf("oidctest: key thumbprint: %v", err)
	}
	return &rsaKey{priv: priv, kid: b64(thumb)}
}

func signRS256(t testing.TB, k *rsaKey, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		t.Fatalf("oidctest: new signer: %v", err)
	}
	jws, err := signer.Sign(mustJSON(t, claims))
	if err != nil {
		t.Fatalf("oidctest: sign: %v", err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatalf("oidctest: serialize: %v", err)
	}
	return tok
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("oidctest: marshal: %v", err)
	}
	return b
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
