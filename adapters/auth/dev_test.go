package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/auth"
	"github.com/carebridge/carebridge/test/oidctest"
)

func devKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := auth.LoadOrCreateDevKey(filepath.Join(t.TempDir(), "dev.pem"))
	if err != nil {
		t.Fatalf("LoadOrCreateDevKey: %v", err)
	}
	return key
}

func newDev(t *testing.T, key *ecdsa.PrivateKey, opts ...auth.Option) *auth.Verifier {
	t.Helper()
	v, err := auth.NewDev(key, audience, opts...)
	if err != nil {
		t.Fatalf("NewDev: %v", err)
	}
	return v
}

func mint(t *testing.T, key *ecdsa.PrivateKey, aud, sub string, ttl time.Duration) string {
	t.Helper()
	tok, err := auth.MintDevToken(key, aud, sub, "", ttl)
	if err != nil {
		t.Fatalf("MintDevToken: %v", err)
	}
	return tok
}

func TestDev_MintedTokenRoundTrips(t *testing.T) {
	key := devKey(t)
	tok := mint(t, key, audience, "dev-user", time.Hour)
	assertAuth(t, newDev(t, key), tok, "dev-user", "")

	header, claims := decodeJWT(t, tok)
	if header["alg"] != "ES256" || header["typ"] != "JWT" || header["kid"] == "" || header["kid"] == nil {
		t.Fatalf("header = %v, want alg ES256, typ JWT and a kid", header)
	}
	for _, c := range []string{"iss", "aud", "sub", "iat", "nbf", "exp"} {
		if _, ok := claims[c]; !ok {
			t.Errorf("claim %q missing from %v", c, claims)
		}
	}
	if claims["iss"] != auth.DevIssuer {
		t.Errorf("iss = %v, want %q", claims["iss"], auth.DevIssuer)
	}
}

func TestDev_RefusesForeignAndInvalidTokens(t *testing.T) {
	key := devKey(t)
	v := newDev(t, key)
	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := oidctest.New(t)

	tests := []struct {
		name     string
		token    string
		wantCode string
	}{
		{"token from a different dev key", mint(t, otherKey, audience, "dev-user", time.Hour), "invalid_token"},
		{"token for another audience", mint(t, key, "other-api", "dev-user", time.Hour), "invalid_token"},
		{"token from the OIDC issuer", iss.Token(t, "dev-user", audience, time.Hour), "invalid_token"},
		{"OIDC-issued token claiming the dev issuer", iss.Sign(t, map[string]any{
			"iss": auth.DevIssuer, "aud": audience, "sub": "dev-user",
			"exp": time.Now().Add(time.Hour).Unix(),
		}), "invalid_token"},
		{"alg none claiming the dev issuer", iss.SignWith(t, oidctest.AlgNone, map[string]any{
			"iss": auth.DevIssuer, "aud": audience, "sub": "dev-user",
			"exp": time.Now().Add(time.Hour).Unix(),
		}), "invalid_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertAuth(t, v, tt.token, "", tt.wantCode)
		})
	}
}

func TestDev_RefusesExpiredToken(t *testing.T) {
	key := devKey(t)
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	assertAuth(t, newDev(t, key, auth.WithClock(later)), mint(t, key, audience, "dev-user", time.Hour), "", "token_expired")
}

func TestMintDevToken_RejectsBadArguments(t *testing.T) {
	key := devKey(t)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		key      *ecdsa.PrivateKey
		aud, sub string
		ttl      time.Duration
	}{
		{"nil key", nil, audience, "u", time.Hour},
		{"P-384 key", p384, audience, "u", time.Hour},
		{"empty audience", key, "", "u", time.Hour},
		{"empty subject", key, audience, "", time.Hour},
		{"zero ttl", key, audience, "u", 0},
		{"negative ttl", key, audience, "u", -time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tok, err := auth.MintDevToken(tt.key, tt.aud, tt.sub, "", tt.ttl); err == nil {
				t.Fatalf("MintDevToken = %q, want an error", tok)
			}
		})
	}
	if _, err := auth.NewDev(nil, audience); err == nil {
		t.Error("NewDev(nil key) succeeded")
	}
	if _, err := auth.NewDev(key, ""); err == nil {
		t.Error("NewDev(empty audience) succeeded")
	}
}

func TestLoadOrCreateDevKey_ReusesKeyAcrossLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.pem")
	first, err := auth.LoadOrCreateDevKey(path)
	if err != nil {
		t.Fatalf("first load: %v", err)
	}
	second, err := auth.LoadOrCreateDevKey(path)
	if err != nil {
		t.Fatalf("second load: %v", err)
	}
	if !first.Equal(second) {
		t.Fatal("second load returned a different key")
	}
	// A token minted before a restart still verifies after it.
	assertAuth(t, newDev(t, second), mint(t, first, audience, "dev-user", time.Hour), "dev-user", "")
}

func TestLoadOrCreateDevKey_CreatesPrivateFileAndDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "carebridge")
	path := filepath.Join(dir, "dev.pem")
	if _, err := auth.LoadOrCreateDevKey(path); err != nil {
		t.Fatalf("LoadOrCreateDevKey: %v", err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700, filepath.Dir(dir): 0o700} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("mode of %s = %04o, want %04o", p, got, want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the key (temporary file left behind?)", len(entries))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "-----BEGIN PRIVATE KEY-----") {
		t.Errorf("key file is not a PKCS#8 PEM: %.30q", data)
	}
}

func TestLoadOrCreateDevKey_ConcurrentFirstUseAgreesOnOneKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.pem")
	keys := make([]*ecdsa.PrivateKey, 4)
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = auth.LoadOrCreateDevKey(path) })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("load %d: %v", i, errs[i])
		}
		if !keys[i].Equal(keys[0]) {
			t.Fatalf("load %d returned a different key", i)
		}
	}
}

func TestLoadOrCreateDevKey_RefusesUnsafeOrBadFiles(t *testing.T) {
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		wantErr string
	}{
		{"readable by others", "", 0o644, "accessible by other users"},
		{"not PEM", "hello", 0o600, "no PEM block"},
		{"wrong PEM type", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", 0o600, "unexpected PEM block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dev.pem")
			content := tt.content
			if content == "" {
				if _, err := auth.LoadOrCreateDevKey(path); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				content = string(b)
			}
			if err := os.WriteFile(path, []byte(content), tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			_, err := auth.LoadOrCreateDevKey(path)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("LoadOrCreateDevKey error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// decodeJWT returns the header and claims of a compact JWS without
// verifying it.
func decodeJWT(t *testing.T, tok string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	for i, dst := range []*map[string]any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatalf("decode part %d: %v", i, err)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			t.Fatalf("unmarshal part %d: %v", i, err)
		}
	}
	return header, claims
}

func TestDev_MintedTokenCarriesScopes(t *testing.T) {
	key := devKey(t)
	v := newDev(t, key)
	tok, err := auth.MintDevToken(key, audience, "dev-user", auth.DevScopes, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	actor, err := v.Authenticate(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if !actor.Allows("user", "Patient", 's') || !actor.Allows("user", "Appointment", 'u') || actor.Allows("system", "Patient", 's') {
		t.Fatalf("scopes = %+v, want the staff scopes %q", actor.Scopes, auth.DevScopes)
	}
	none, err := v.Authenticate(context.Background(), mint(t, key, audience, "dev-user", time.Hour))
	if err != nil || none.Scopes != nil {
		t.Fatalf("a token minted without scopes has %+v (%v)", none.Scopes, err)
	}
}
