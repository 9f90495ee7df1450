package webhook_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/adapters/webhook"
)

func newSealer(t testing.TB) *webhook.Sealer {
	t.Helper()
	s, err := webhook.NewSealer(bytes.Repeat([]byte{7}, webhook.KeySize))
	if err != nil {
		t.Fatalf("NewSealer: %v", err)
	}
	return s
}

func TestNewSecret_IsWhsecAndBase64Of32RandomBytes(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		text, raw := webhook.NewSecret()
		enc, ok := strings.CutPrefix(text, "whsec_")
		if !ok {
			t.Fatalf("secret %q does not start with whsec_", text)
		}
		dec, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatalf("secret is not standard base64: %v", err)
		}
		if len(dec) != 32 || !bytes.Equal(dec, raw) {
			t.Fatalf("decoded secret has %d bytes, equal to raw: %v; want the 32 raw bytes", len(dec), bytes.Equal(dec, raw))
		}
		if seen[text] {
			t.Fatal("NewSecret returned the same secret twice")
		}
		seen[text] = true
	}
}

func TestSealer_OpensWhatItSealed(t *testing.T) {
	s := newSealer(t)
	_, raw := webhook.NewSecret()
	sealed := s.Seal("sub_1", raw)
	if bytes.Contains(sealed, raw) {
		t.Fatal("sealed secret contains the secret in clear")
	}
	if len(sealed) != 12+len(raw)+16 {
		t.Fatalf("sealed length = %d, want nonce+ciphertext+tag = %d", len(sealed), 12+len(raw)+16)
	}
	got, err := s.Open("sub_1", sealed)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if !bytes.Equal(got, raw) {
		t.Fatal("Open returned other bytes than were sealed")
	}
	if again := s.Seal("sub_1", raw); bytes.Equal(again, sealed) {
		t.Fatal("two seals of the same secret are equal: nonce is not fresh")
	}
}

func TestSealer_Open_RejectsTamperedSecret(t *testing.T) {
	s := newSealer(t)
	_, raw := webhook.NewSecret()
	sealed := s.Seal("sub_1", raw)
	for _, i := range []int{0, 11, 12, 30, len(sealed) - 1} {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := s.Open("sub_1", bad); err == nil {
			t.Errorf("Open accepted a secret with byte %d flipped", i)
		}
	}
	for _, bad := range [][]byte{nil, {}, sealed[:12], sealed[:27], sealed[:len(sealed)-1], append(bytes.Clone(sealed), 0)} {
		if _, err := s.Open("sub_1", bad); err == nil {
			t.Errorf("Open accepted a sealed secret of %d bytes", len(bad))
		}
	}
}

func TestSealer_Open_RejectsOtherSubscription(t *testing.T) {
	s := newSealer(t)
	_, raw := webhook.NewSecret()
	sealed := s.Seal("sub_1", raw)
	for _, id := range []string{"sub_2", "", "sub_1 ", "sub_"} {
		if _, err := s.Open(id, sealed); err == nil {
			t.Errorf("Open(%q) accepted a secret sealed for sub_1", id)
		}
	}
}

func TestSealer_Open_RejectsOtherKey(t *testing.T) {
	_, raw := webhook.NewSecret()
	sealed := newSealer(t).Seal("sub_1", raw)
	other, err := webhook.NewSealer(bytes.Repeat([]byte{8}, webhook.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Open("sub_1", sealed)
	if err == nil {
		t.Fatal("Open under another key succeeded")
	}
	if enc := base64.StdEncoding.EncodeToString(raw); strings.Contains(err.Error(), enc) || strings.Contains(err.Error(), string(raw)) {
		t.Fatalf("error %q contains the secret", err)
	}
}

func TestSealer_SealsUnderFirstKeyAndOpensUnderAny(t *testing.T) {
	k1, k2, k3 := bytes.Repeat([]byte{1}, webhook.KeySize), bytes.Repeat([]byte{2}, webhook.KeySize), bytes.Repeat([]byte{3}, webhook.KeySize)
	old, _ := webhook.NewSealer(k1)
	_, raw := webhook.NewSecret()
	sealedOld := old.Seal("sub_1", raw)

	rotated, err := webhook.NewSealer(k2, k3, k1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open("sub_1", sealedOld); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("a secret sealed under the older key: %v", err)
	}
	if _, err := rotated.Open("sub_2", sealedOld); err == nil {
		t.Fatal("an older key opened the secret for another subscription")
	}
	sealedNew := rotated.Seal("sub_1", raw)
	if _, err := old.Open("sub_1", sealedNew); err == nil {
		t.Fatal("a new secret was sealed under the older key")
	}
	onlyNew, _ := webhook.NewSealer(k2)
	if got, err := onlyNew.Open("sub_1", sealedNew); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("a new secret does not open under the first key alone: %v", err)
	}
	if _, err := onlyNew.Open("sub_1", sealedOld); err == nil {
		t.Fatal("a secret sealed under a retired key still opens")
	}
	resealed, err := rotated.Reseal("sub_1", sealedOld)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := onlyNew.Open("sub_1", resealed); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("a resealed secret does not open under the first key alone: %v", err)
	}
	if _, err := onlyNew.Reseal("sub_1", sealedOld); err == nil {
		t.Fatal("Reseal opened a secret under a retired key")
	}
	if _, err := webhook.NewSealer(k2, k1[:16]); err == nil {
		t.Fatal("NewSealer accepted a 16-byte older key")
	}
}

func TestNewSealer_RejectsKeyNot32Bytes(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33, 64} {
		key := make([]byte, n)
		_, _ = rand.Read(key)
		if _, err := webhook.NewSealer(key); err == nil {
			t.Errorf("NewSealer accepted a %d-byte key", n)
		}
	}
}

func TestValidURL(t *testing.T) {
	tests := []struct {
		name, url string
		ok        bool
	}{
		{"https", "https://example.com/hooks", true},
		{"http with port and path", "http://hooks.example.com:8080/in/carebridge?x=1", true},
		{"loopback with port", "http://127.0.0.1:9000/hook", true},
		{"localhost", "http://localhost:3000/", true},
		{"ipv6 loopback", "http://[::1]:9000/hook", true},
		{"upper-case scheme", "HTTPS://example.com/", true},
		{"longest accepted", "https://example.com/" + strings.Repeat("a", 2048-len("https://example.com/")), true},

		{"empty", "", false},
		{"ftp", "ftp://example.com/file", false},
		{"javascript", "javascript:alert(1)", false},
		{"file", "file:///etc/passwd", false},
		{"relative path", "/hooks", false},
		{"relative host", "example.com/hooks", false},
		{"scheme-relative", "//example.com/hooks", false},
		{"no host", "http://", false},
		{"no host with path", "http:///hooks", false},
		{"port only", "http://:8080/", false},
		{"opaque", "http:example.com", false},
		{"user and password", "https://user:pass@example.com/", false},
		{"user only", "https://token@example.com/", false},
		{"too long", "https://example.com/" + strings.Repeat("a", 2049-len("https://example.com/")), false},
		{"port out of range", "http://example.com:70000/", false},
		{"port zero", "http://example.com:0/", false},
		{"leading space", " https://example.com/", false},
		{"trailing newline", "https://example.com/\n", false},
		{"control character", "https://example.com/a\x7fb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := webhook.ValidURL(tt.url)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
			}
			if err != nil && (strings.Contains(err.Error(), "user:pass") || tt.url != "" && strings.Contains(err.Error(), tt.url)) {
				t.Fatalf("error %q repeats the URL", err)
			}
		})
	}
}

func FuzzValidURL(f *testing.F) {
	for _, s := range []string{"https://example.com/hooks", "http://127.0.0.1:9000/h?q=1", "http://", "ftp://x",
		"javascript:alert(1)", "https://u:p@h/", "http://[::1]:0/", "http:x", "HTTP://A", "http://%41/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if webhook.ValidURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("ValidURL accepted %q, which does not parse: %v", raw, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("ValidURL accepted %q with scheme %q", raw, u.Scheme)
		}
		if u.Host == "" || u.Hostname() == "" || u.User != nil || len(raw) > webhook.MaxURLLength {
			t.Fatalf("ValidURL accepted %q: host %q, user %v, length %d", raw, u.Host, u.User, len(raw))
		}
	})
}
