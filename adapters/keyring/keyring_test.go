package keyring_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/core/storage"
)

// seq is the key 00 01 … 1f.
func seq() []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

func filled(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestParseKey(t *testing.T) {
	fb := filled(0xfb) // encodes with '+' and '/' (std) or '-' and '_' (url)
	tests := []struct {
		name string
		in   string
		want []byte // nil: an error
	}{
		{"hex lower", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", seq()},
		{"hex upper", "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F", seq()},
		{"std padded", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", seq()},
		{"std raw", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", seq()},
		{"std with + and /", "+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/s=", fb},
		{"url padded", "-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_s=", fb},
		{"url raw", "-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_s", fb},
		{"surrounding space", "  \tAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", seq()},
		{"empty", "", nil},
		{"blank", "   ", nil},
		{"hex 31 bytes", strings.Repeat("ab", 31), nil},
		{"hex 33 bytes", strings.Repeat("ab", 33), nil},
		{"hex 63 chars", strings.Repeat("a", 63), nil},
		{"hex with non-hex", strings.Repeat("ab", 31) + "zz", nil},
		{"base64 of 31 bytes", base64.StdEncoding.EncodeToString(make([]byte, 31)), nil},
		{"base64 of 33 bytes", base64.StdEncoding.EncodeToString(append(filled(1), 1)), nil},
		{"mixed alphabets", "+_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_s=", nil},
		{"inner space", "AAECAwQFBgcICQoLDA0OD xAREhMUFRYXGBkaGxwdHh8=", nil},
		{"all zero hex", strings.Repeat("00", 32), nil},
		{"all zero base64", base64.StdEncoding.EncodeToString(make([]byte, 32)), nil},
		{"passphrase", "correct horse battery staple", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keyring.ParseKey(tt.in)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("ParseKey(%q) = %x, want an error", tt.in, got)
				}
				if s := strings.TrimSpace(tt.in); len(s) >= 8 && strings.Contains(err.Error(), s) {
					t.Fatalf("error %q repeats the key", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("ParseKey(%q) = %x, %v; want %x", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseKey_AcceptsEveryEncoding(t *testing.T) {
	for _, key := range [][]byte{seq(), filled(0xfb), filled(0xff), filled(0x3e)} {
		for _, s := range []string{
			hex.EncodeToString(key),
			strings.ToUpper(hex.EncodeToString(key)),
			base64.StdEncoding.EncodeToString(key),
			base64.RawStdEncoding.EncodeToString(key),
			base64.URLEncoding.EncodeToString(key),
			base64.RawURLEncoding.EncodeToString(key),
		} {
			got, err := keyring.ParseKey(s)
			if err != nil || !bytes.Equal(got, key) {
				t.Errorf("ParseKey(%q) = %x, %v; want %x", s, got, err, key)
			}
		}
	}
}

func TestKeyID(t *testing.T) {
	// First 16 hex characters of SHA-256(00 01 … 1f).
	if got, want := keyring.KeyID(seq()), "630dcd2966c43366"; got != want {
		t.Errorf("KeyID = %q, want %q", got, want)
	}
	if keyring.KeyID(filled(1)) == keyring.KeyID(filled(2)) {
		t.Error("different keys have the same id")
	}
}

func TestParsePrevious(t *testing.T) {
	k1, k2 := seq(), filled(0xfb)
	h1, b2 := hex.EncodeToString(k1), base64.URLEncoding.EncodeToString(k2)
	tests := []struct {
		name    string
		in      string
		want    map[string][]byte
		wantErr bool
	}{
		{name: "unset", in: "", want: map[string][]byte{}},
		{name: "blank", in: "  ", want: map[string][]byte{}},
		{name: "one", in: "k1:" + h1, want: map[string][]byte{"k1": k1}},
		{name: "two with spaces", in: " k1 : " + h1 + " ,  2024-06_b.x:" + b2 + " ", want: map[string][]byte{"k1": k1, "2024-06_b.x": k2}},
		{name: "same key under two ids", in: "a:" + h1 + ",b:" + h1, want: map[string][]byte{"a": k1, "b": k1}},
		{name: "empty id", in: ":" + h1, wantErr: true},
		{name: "blank id", in: "  :" + h1, wantErr: true},
		{name: "duplicate id", in: "k1:" + h1 + ",k1:" + b2, wantErr: true},
		{name: "bad key", in: "k1:" + h1[:60], wantErr: true},
		{name: "missing key", in: "k1:", wantErr: true},
		{name: "missing colon", in: "k1" + h1, wantErr: true},
		{name: "empty entry", in: "k1:" + h1 + ",,k2:" + b2, wantErr: true},
		{name: "trailing comma", in: "k1:" + h1 + ",", wantErr: true},
		{name: "id with space", in: "k 1:" + h1, wantErr: true},
		{name: "id with slash", in: "k/1:" + h1, wantErr: true},
		{name: "id too long", in: strings.Repeat("k", 65) + ":" + h1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keyring.ParsePrevious(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error, got %d keys", len(got))
				}
				for _, secret := range []string{h1, h1[:60], b2} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("error %q repeats key material", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d keys, want %d", len(got), len(tt.want))
			}
			for id, k := range tt.want {
				if !bytes.Equal(got[id], k) {
					t.Errorf("key %q = %x, want %x", id, got[id], k)
				}
			}
		})
	}
}

func TestParseList_KeepsOrderAndNamesTheBadEntry(t *testing.T) {
	k1, k2 := seq(), filled(0xfb)
	h1, b2 := hex.EncodeToString(k1), base64.StdEncoding.EncodeToString(k2)
	got, err := keyring.ParseList(" new:" + b2 + " , old : " + h1)
	if err != nil || len(got) != 2 || got[0].ID != "new" || !bytes.Equal(got[0].Key, k2) || got[1].ID != "old" || !bytes.Equal(got[1].Key, k1) {
		t.Fatalf("ParseList = %+v, %v; want new then old", got, err)
	}
	if got, err := keyring.ParseList(" "); err != nil || got != nil {
		t.Fatalf("blank list = %+v, %v", got, err)
	}
	for in, want := range map[string]string{
		"a:" + h1 + ",a:" + b2:     "key 2: duplicate key id",
		"a:" + h1 + ",b:" + h1[2:]: "key 2: keyring: key must be 32 bytes",
		"a/b:" + h1:                "key 1: key id may contain only",
		h1:                         "key 1 is not of the form id:key",
	} {
		_, err := keyring.ParseList(in)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), h1[2:]) {
			t.Errorf("ParseList(%.12q…) = %v, want an error starting %q without the key", in, err, want)
		}
	}
}

func TestNew(t *testing.T) {
	k1, k2 := seq(), filled(0xfb)
	tests := []struct {
		name      string
		currentID string
		current   []byte
		previous  map[string][]byte
		wantID    string
		wantErr   bool
	}{
		{name: "explicit id", currentID: "k1", current: k1, wantID: "k1"},
		{name: "default id", current: k1, wantID: keyring.KeyID(k1)},
		{name: "no key", wantID: ""},
		{name: "no key, previous only", previous: map[string][]byte{"k1": k1}, wantID: ""},
		{name: "current also in previous", currentID: "k1", current: k1, previous: map[string][]byte{"k1": k1}, wantID: "k1"},
		{name: "id without key", currentID: "k1", wantErr: true},
		{name: "short key", current: k1[:31], wantErr: true},
		{name: "empty non-nil key", current: []byte{}, wantErr: true},
		{name: "bad id", currentID: "k:1", current: k1, wantErr: true},
		{name: "short previous key", current: k1, previous: map[string][]byte{"old": k2[:16]}, wantErr: true},
		{name: "bad previous id", current: k1, previous: map[string][]byte{"": k2}, wantErr: true},
		{name: "id names two keys", currentID: "k1", current: k1, previous: map[string][]byte{"k1": k2}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := keyring.New(tt.currentID, tt.current, tt.previous)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.CurrentID(); got != tt.wantID {
				t.Errorf("CurrentID = %q, want %q", got, tt.wantID)
			}
		})
	}
}

func mustNew(t *testing.T, id string, current []byte, previous map[string][]byte) *keyring.Ring {
	t.Helper()
	r, err := keyring.New(id, current, previous)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRing_ImplementsKeyRing(t *testing.T) {
	var _ storage.KeyRing = mustNew(t, "", seq(), nil)
}

func TestRing_WrapUnwrap(t *testing.T) {
	r := mustNew(t, "k1", seq(), nil)
	dataKey := filled(7)
	id, wrapped, err := r.Wrap(dataKey)
	if err != nil {
		t.Fatal(err)
	}
	if id != "k1" {
		t.Errorf("key id = %q, want k1", id)
	}
	if len(wrapped) != 12+32+16 {
		t.Errorf("wrapped key is %d bytes, want 60", len(wrapped))
	}
	if bytes.Contains(wrapped, dataKey[:8]) {
		t.Error("wrapped key contains the data key")
	}
	got, err := r.Unwrap(id, wrapped)
	if err != nil || !bytes.Equal(got, dataKey) {
		t.Fatalf("Unwrap = %x, %v; want %x", got, err, dataKey)
	}
	// A fresh nonce every time.
	_, again, err := r.Wrap(dataKey)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again[:12], wrapped[:12]) || bytes.Equal(again, wrapped) {
		t.Error("two wraps of the same key are equal")
	}
}

func TestRing_WrapRejectsBadDataKeys(t *testing.T) {
	r := mustNew(t, "k1", seq(), nil)
	for _, n := range []int{0, 16, 31, 33} {
		if _, _, err := r.Wrap(make([]byte, n)); err == nil {
			t.Errorf("Wrap of a %d-byte data key: no error", n)
		}
	}
}

func TestRing_Rotation(t *testing.T) {
	k1, k2 := seq(), filled(0xfb)
	dataKey := filled(9)
	before := mustNew(t, "k1", k1, nil)
	id, wrapped, err := before.Wrap(dataKey)
	if err != nil {
		t.Fatal(err)
	}
	after := mustNew(t, "k2", k2, map[string][]byte{"k1": k1})
	if got, err := after.Unwrap(id, wrapped); err != nil || !bytes.Equal(got, dataKey) {
		t.Fatalf("after rotation: Unwrap = %x, %v; want %x", got, err, dataKey)
	}
	newID, newWrapped, err := after.Wrap(dataKey)
	if err != nil || newID != "k2" {
		t.Fatalf("after rotation: Wrap id %q, %v; want k2", newID, err)
	}
	if _, err := before.Unwrap(newID, newWrapped); !errors.Is(err, storage.ErrEncryptionKeyUnknown) {
		t.Errorf("old ring, new key: err = %v, want ErrEncryptionKeyUnknown", err)
	}
	// The key removed from the ring: files under it cannot be opened.
	dropped := mustNew(t, "k2", k2, nil)
	if _, err := dropped.Unwrap(id, wrapped); !errors.Is(err, storage.ErrEncryptionKeyUnknown) {
		t.Errorf("dropped key: err = %v, want ErrEncryptionKeyUnknown", err)
	}
	// The default id also keeps working once the key becomes a previous key.
	byHash := mustNew(t, "", k1, nil)
	hid, hwrapped, err := byHash.Wrap(dataKey)
	if err != nil {
		t.Fatal(err)
	}
	later := mustNew(t, "k2", k2, map[string][]byte{keyring.KeyID(k1): k1})
	if got, err := later.Unwrap(hid, hwrapped); err != nil || !bytes.Equal(got, dataKey) {
		t.Fatalf("default id after rotation: Unwrap = %x, %v", got, err)
	}
}

func TestRing_WithoutCurrentKey(t *testing.T) {
	k1 := seq()
	id, wrapped, err := mustNew(t, "k1", k1, nil).Wrap(filled(3))
	if err != nil {
		t.Fatal(err)
	}
	r := mustNew(t, "", nil, map[string][]byte{"k1": k1})
	if _, _, err := r.Wrap(filled(3)); !errors.Is(err, storage.ErrEncryptionKeyMissing) {
		t.Errorf("Wrap without a key: err = %v, want ErrEncryptionKeyMissing", err)
	}
	if got, err := r.Unwrap(id, wrapped); err != nil || !bytes.Equal(got, filled(3)) {
		t.Errorf("Unwrap with a previous key = %x, %v", got, err)
	}
	empty := mustNew(t, "", nil, nil)
	if _, _, err := empty.Wrap(filled(3)); !errors.Is(err, storage.ErrEncryptionKeyMissing) {
		t.Errorf("empty ring Wrap: err = %v, want ErrEncryptionKeyMissing", err)
	}
	if _, err := empty.Unwrap(id, wrapped); !errors.Is(err, storage.ErrEncryptionKeyUnknown) {
		t.Errorf("empty ring Unwrap: err = %v, want ErrEncryptionKeyUnknown", err)
	}
}

func TestRing_UnwrapFailures(t *testing.T) {
	k1, k2 := seq(), filled(0xfb)
	r := mustNew(t, "k1", k1, map[string][]byte{"k2": k2})
	_, wrapped, err := r.Wrap(filled(5))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(wrapped)
		b[i] ^= 0x01
		return b
	}
	tests := []struct {
		name    string
		id      string
		wrapped []byte
		want    error
	}{
		{"unknown id", "k9", wrapped, storage.ErrEncryptionKeyUnknown},
		{"empty id", "", wrapped, storage.ErrEncryptionKeyUnknown},
		{"other known id", "k2", wrapped, storage.ErrBlobCorrupt},
		{"nonce flipped", "k1", flip(0), storage.ErrBlobCorrupt},
		{"ciphertext flipped", "k1", flip(20), storage.ErrBlobCorrupt},
		{"tag flipped", "k1", flip(len(wrapped) - 1), storage.ErrBlobCorrupt},
		{"truncated", "k1", wrapped[:len(wrapped)-1], storage.ErrBlobCorrupt},
		{"extended", "k1", append(bytes.Clone(wrapped), 0), storage.ErrBlobCorrupt},
		{"shorter than a nonce", "k1", wrapped[:5], storage.ErrBlobCorrupt},
		{"empty", "k1", nil, storage.ErrBlobCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Unwrap(tt.id, tt.wrapped)
			if !errors.Is(err, tt.want) || got != nil {
				t.Fatalf("Unwrap = %x, %v; want %v", got, err, tt.want)
			}
		})
	}
	// Every bit matters.
	for i := range wrapped {
		for bit := range 8 {
			b := bytes.Clone(wrapped)
			b[i] ^= 1 << bit
			if _, err := r.Unwrap("k1", b); !errors.Is(err, storage.ErrBlobCorrupt) {
				t.Fatalf("bit %d of byte %d flipped: err = %v", bit, i, err)
			}
		}
	}
	// The unknown id is named for the logs.
	if _, err := r.Unwrap("k9", wrapped); !strings.Contains(err.Error(), `"k9"`) {
		t.Errorf("error %q does not name the id", err)
	}
}

func TestRing_ConcurrentUse(t *testing.T) {
	r := mustNew(t, "k2", filled(0xfb), map[string][]byte{"k1": seq()})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 200 {
				key := filled(byte(g))
				id, w, err := r.Wrap(key)
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := r.Unwrap(id, w); err != nil || !bytes.Equal(got, key) {
					t.Errorf("Unwrap = %x, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{
		"", "  ", "00", strings.Repeat("00", 32), strings.Repeat("ab", 32),
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_s",
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8==", "\xff\xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := keyring.ParseKey(s)
		if err != nil {
			if key != nil {
				t.Fatal("key returned with an error")
			}
			if trimmed := strings.TrimSpace(s); len(trimmed) >= 8 && strings.Contains(err.Error(), trimmed) {
				t.Fatalf("error %q repeats the input", err)
			}
			return
		}
		if len(key) != 32 {
			t.Fatalf("key is %d bytes", len(key))
		}
		for _, enc := range []string{hex.EncodeToString(key), base64.StdEncoding.EncodeToString(key)} {
			again, err := keyring.ParseKey(enc)
			if err != nil || !bytes.Equal(again, key) {
				t.Fatalf("re-encoded key does not parse back: %v", err)
			}
		}
	})
}
