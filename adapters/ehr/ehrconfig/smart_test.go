package ehrconfig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// pemKeys are PEM private keys for the private_key_jwt tests, made once.
type pemKeys struct {
	rsa2048, rsa1024, p384SEC1, p384PKCS8, p256 string
}

var testPEMKeys = sync.OnceValue(func() pemKeys {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	enc := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	pkcs8 := func(k any) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		must(err)
		return enc("PRIVATE KEY", der)
	}
	r2048, err := rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	r1024, err := rsa.GenerateKey(rand.Reader, 1024)
	must(err)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	must(err)
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	sec1, err := x509.MarshalECPrivateKey(p384)
	must(err)
	return pemKeys{
		rsa2048:   pkcs8(r2048),
		rsa1024:   enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(r1024)),
		p384SEC1:  enc("EC PRIVATE KEY", sec1),
		p384PKCS8: pkcs8(p384),
		p256:      pkcs8(p256),
	}
})

// pemBody is a line of the key's base64 body, which no output may show.
func pemBody(p string) string { return strings.Split(p, "\n")[2] }

func smartSystem(t *testing.T, kv ...any) map[string]any {
	t.Helper()
	a := map[string]any{
		"type": "private_key_jwt", "token_url": "https://ehr.example/oauth2/token", "client_id": "carebridge",
		"private_key": encrypt(t, testPEMKeys().rsa2048), "key_id": "k1", "algorithm": "RS384",
		"scopes": []string{"system/Patient.read"},
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(a, kv[i].(string))
		} else {
			a[kv[i].(string)] = kv[i+1]
		}
	}
	s := validSystem()
	s["authentication"] = a
	return s
}

func TestParse_PrivateKeyJWT(t *testing.T) {
	keys := testPEMKeys()
	getenv := env(map[string]string{"EHR_KEY": keys.p384SEC1})
	t.Run("RS384 from enc:v1:", func(t *testing.T) {
		cfg := mustParse(t, systemsFile(t, smartSystem(t)))
		a := cfg.Systems[0].Auth
		if a.Type != AuthPrivateKeyJWT || a.TokenURL != "https://ehr.example/oauth2/token" || a.ClientID != "carebridge" ||
			a.KeyID != "k1" || a.Algorithm != "RS384" || a.PrivateKey.Value() != keys.rsa2048 ||
			len(a.Scopes) != 1 || a.Scopes[0] != "system/Patient.read" {
			t.Errorf("auth = %+v", a)
		}
	})
	t.Run("ES384 from env:, SEC 1 and PKCS #8", func(t *testing.T) {
		// openssl ecparam -genkey writes an EC PARAMETERS block first.
		withParams := "-----BEGIN EC PARAMETERS-----\nBgUrgQQAIg==\n-----END EC PARAMETERS-----\n" + keys.p384SEC1
		for _, pk := range []string{keys.p384SEC1, keys.p384PKCS8, withParams} {
			getenv := env(map[string]string{"EHR_KEY": pk})
			cfg, err := Parse(testAdapters, systemsFile(t, smartSystem(t, "private_key", "env:EHR_KEY", "algorithm", "ES384")), nil, getenv)
			if err != nil {
				t.Fatal(err)
			}
			if a := cfg.Systems[0].Auth; a.Algorithm != "ES384" || a.PrivateKey.Value() != pk {
				t.Errorf("auth = %+v", a)
			}
		}
	})
	t.Run("http token_url on loopback", func(t *testing.T) {
		for _, u := range []string{"http://127.0.0.1:8080/token", "http://localhost/token", "http://[::1]/token"} {
			mustParse(t, systemsFile(t, smartSystem(t, "token_url", u)))
		}
	})

	tests := []struct {
		name string
		sys  map[string]any
		want []string
	}{
		{"missing key_id", smartSystem(t, "key_id", nil), []string{"authentication.key_id: is required for private_key_jwt"}},
		{"key_id with a newline", smartSystem(t, "key_id", "k\n1"), []string{"authentication.key_id: must be at most 256 characters, without control characters"}},
		{"missing algorithm", smartSystem(t, "algorithm", nil), []string{"authentication.algorithm: is required for private_key_jwt (RS384 or ES384)"}},
		{"wrong algorithm", smartSystem(t, "algorithm", "HS256"), []string{"authentication.algorithm: must be RS384 or ES384"}},
		{"RS256 is not RS384", smartSystem(t, "algorithm", "RS256"), []string{"authentication.algorithm: must be RS384 or ES384"}},
		{"RSA key with ES384", smartSystem(t, "algorithm", "ES384"), []string{"authentication.private_key: is an RSA key, which ES384 cannot use (RS384 can)"}},
		{"EC key with RS384", smartSystem(t, "private_key", "env:EHR_KEY"), []string{"authentication.private_key: is an EC key, which RS384 cannot use (ES384 can)"}},
		{"P-256 key with ES384", smartSystem(t, "private_key", encrypt(t, keys.p256), "algorithm", "ES384"), []string{"authentication.private_key: is an EC key on P-256; ES384 needs P-384"}},
		{"small RSA key", smartSystem(t, "private_key", encrypt(t, keys.rsa1024)), []string{"authentication.private_key: is a 1024-bit RSA key; at least 2048 bits are required"}},
		{"plaintext key refused", smartSystem(t, "private_key", keys.rsa2048), []string{"authentication.private_key: plaintext secrets are refused; use enc:v1: or env:"}},
		{"not a PEM", smartSystem(t, "private_key", encrypt(t, "not a key at all")), []string{"authentication.private_key: is not a PEM private key"}},
		{"a public key", smartSystem(t, "private_key", encrypt(t, "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")), []string{`authentication.private_key: is a PEM "PUBLIC KEY" block, not a private key`}},
		{"encrypted PEM", smartSystem(t, "private_key", encrypt(t, "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n")), []string{"authentication.private_key: is an encrypted PEM key"}},
		{"missing private_key", smartSystem(t, "private_key", nil), []string{"authentication.private_key: is required for private_key_jwt"}},
		{"http token_url", smartSystem(t, "token_url", "http://ehr.example/token"), []string{"authentication.token_url: must be https (http only on a loopback host)"}},
		{"missing token_url", smartSystem(t, "token_url", nil), []string{"authentication.token_url: is required"}},
		{"missing client_id", smartSystem(t, "client_id", nil), []string{"authentication.client_id: is required for private_key_jwt"}},
		{"client_secret is not used", smartSystem(t, "client_secret", "env:EHR_KEY"), []string{"authentication.client_secret: is not used with type private_key_jwt"}},
		{"key fields without private_key_jwt", func() map[string]any {
			s := validSystem()
			s["authentication"] = map[string]any{"type": "basic", "username": "u", "password": "env:EHR_KEY", "key_id": "k1"}
			return s
		}(), []string{"authentication.key_id: is not used with type basic"}},
		{"every problem at once", smartSystem(t, "key_id", nil, "algorithm", "ES384", "private_key", encrypt(t, keys.rsa1024), "client_id", nil),
			[]string{"key_id: is required", "client_id: is required", "private_key: is an RSA key, which ES384 cannot use"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(testAdapters, systemsFile(t, tt.sys), key(t, testKeyHex), getenv)
			if err == nil {
				t.Fatalf("Parse succeeded, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), "ehr_systems[0] clinic-a: "+w) && !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			if n, want := len(strings.Split(err.Error(), "\n")), len(tt.want); n != want {
				t.Errorf("%d problems reported, want %d:\n%v", n, want, err)
			}
			for _, k := range []string{keys.rsa2048, keys.rsa1024, keys.p384SEC1, keys.p256} {
				if strings.Contains(err.Error(), pemBody(k)) {
					t.Errorf("error reveals a private key: %v", err)
				}
			}
			if cfg != nil {
				t.Error("a config returned with an error")
			}
		})
	}
}

func TestSecret_PrivateKeyIsRedacted(t *testing.T) {
	keys := testPEMKeys()
	cfg := mustParse(t, systemsFile(t, smartSystem(t)))
	a := cfg.Systems[0].Auth
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		outs = append(outs, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, a), fmt.Sprintf(verb, a.PrivateKey))
	}
	j, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&logs, nil), slog.NewTextHandler(&logs, nil)} {
		slog.New(h).Info("system", "system", cfg.Systems[0], "auth", a, "config", cfg)
	}
	outs = append(outs, string(j), string(y), logs.String())
	for _, out := range outs {
		if strings.Contains(out, pemBody(keys.rsa2048)) || strings.Contains(out, "BEGIN PRIVATE KEY") ||
			strings.Contains(out, fmt.Sprintf("%x", keys.rsa2048[:40])) {
			t.Errorf("private key revealed in %q", out)
		}
	}
	for _, want := range []string{"private_key=[REDACTED]", "key_id=k1", "algorithm=RS384", "client_id=carebridge"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}
