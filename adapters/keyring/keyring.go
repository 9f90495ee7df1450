// Package keyring wraps and unwraps per-file data keys with AES-256-GCM
// master keys: the current key (CLOUD_STORAGE_ENCRYPTION_KEY, with its id
// CLOUD_STORAGE_ENCRYPTION_KEY_ID) and the keys kept for decrypting after a
// rotation (CLOUD_STORAGE_PREVIOUS_KEYS). It implements storage.KeyRing.
//
// A wrapped data key is nonce (12 random bytes) || ciphertext || tag (16
// bytes), sealed with the additional data "carebridge/keyring/v1:" || key
// id, so a wrapped key only opens under the id it was recorded with. The id
// of a key must therefore never change: to rename a key, keep it under its
// old id among the previous keys as well.
package keyring

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/carebridge/carebridge/core/storage"
)

const (
	// KeySize is the size of a master key and of a data key in bytes.
	KeySize = 32
	// MaxIDLength is the longest key id accepted.
	MaxIDLength = 64
	// domain separates this use of a master key from any other.
	domain = "carebridge/keyring/v1:"
)

// ParseKey decodes a 32-byte key given as 64 hexadecimal characters or as
// base64 (standard or URL alphabet, padded or not). Surrounding white space
// is ignored. Errors never contain the key material.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("keyring: key is empty")
	}
	var key []byte
	if len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			key = k
		}
	}
	if key == nil {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
				key = k
				break
			}
		}
	}
	if key == nil {
		return nil, fmt.Errorf("keyring: key must be %d bytes as base64 or %d hex characters (got %d characters that are neither)", KeySize, 2*KeySize, len(s))
	}
	if allZero(key) {
		return nil, errors.New("keyring: key is all zero bytes")
	}
	return key, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// KeyID returns the default id of a key: the first 16 hex characters of
// the SHA-256 of the key.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}

// validateID accepts ids of 1 to MaxIDLength ASCII letters, digits, '.',
// '_' and '-': they are stored beside every encrypted file and cannot
// contain the separators of ParsePrevious. Its errors do not repeat the id,
// which may be key material pasted into the wrong place.
func validateID(id string) error {
	if id == "" {
		return errors.New("key id is empty")
	}
	if len(id) > MaxIDLength {
		return fmt.Errorf("key id is longer than %d characters", MaxIDLength)
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return errors.New("key id may contain only letters, digits, '.', '_' and '-'")
		}
	}
	return nil
}

// Named is a key with its id, as an id:key list gives it.
type Named struct {
	ID  string
	Key []byte
}

// ParseList parses a comma-separated list of id:key pairs, in order,
// where each key is in a form ParseKey accepts. White space around
// entries, ids and keys is ignored; an empty or blank list is no keys. An
// empty entry, an invalid or duplicate id and a bad key are errors, which
// name the entry by position and never repeat ids or key material.
func ParseList(s string) ([]Named, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var keys []Named
	for i, entry := range strings.Split(s, ",") {
		id, key, ok := strings.Cut(entry, ":")
		id = strings.TrimSpace(id)
		switch {
		case strings.TrimSpace(entry) == "":
			return nil, fmt.Errorf("key %d is empty", i+1)
		case !ok:
			return nil, fmt.Errorf("key %d is not of the form id:key", i+1)
		}
		if err := validateID(id); err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if slices.ContainsFunc(keys, func(n Named) bool { return n.ID == id }) {
			return nil, fmt.Errorf("key %d: duplicate key id", i+1)
		}
		k, err := ParseKey(key)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		keys = append(keys, Named{ID: id, Key: k})
	}
	return keys, nil
}

// ParsePrevious parses CLOUD_STORAGE_PREVIOUS_KEYS, an id:key list (see
// ParseList), into a map from id to key.
func ParsePrevious(s string) (map[string][]byte, error) {
	list, err := ParseList(s)
	if err != nil {
		return nil, fmt.Errorf("keyring: previous %w", err)
	}
	keys := make(map[string][]byte, len(list))
	for _, n := range list {
		keys[n.ID] = n.Key
	}
	return keys, nil
}

// Ring holds the master keys. It is safe for concurrent use. The zero Ring
// holds no key: Wrap fails with storage.ErrEncryptionKeyMissing and Unwrap
// with storage.ErrEncryptionKeyUnknown.
type Ring struct {
	currentID string
	current   cipher.AEAD            // nil when no current key is configured
	keys      map[string]cipher.AEAD // every key by id, current included
}

// New returns a ring that wraps with current, recorded as currentID
// (KeyID(current) when empty), and unwraps with current and previous (id to
// key). current may be nil: then Wrap fails with
// storage.ErrEncryptionKeyMissing and Unwrap still works with the previous
// keys. Every key must be KeySize bytes; ids are 1 to MaxIDLength letters,
// digits, '.', '_' or '-'; an id may not name two different keys.
func New(currentID string, current []byte, previous map[string][]byte) (*Ring, error) {
	r := &Ring{keys: make(map[string]cipher.AEAD, len(previous)+1)}
	if current == nil {
		if currentID != "" {
			return nil, errors.New("keyring: key id given without a key")
		}
	} else {
		if currentID == "" {
			currentID = KeyID(current)
		}
		if err := validateID(currentID); err != nil {
			return nil, fmt.Errorf("keyring: current key: %w", err)
		}
		aead, err := newAEAD(current)
		if err != nil {
			return nil, fmt.Errorf("keyring: current key: %w", err)
		}
		if old, ok := previous[currentID]; ok && !bytes.Equal(old, current) {
			return nil, errors.New("keyring: the current key id also names a different previous key")
		}
		r.currentID, r.current = currentID, aead
		r.keys[currentID] = aead
	}
	// In id order, so that the first error reported does not vary.
	for _, id := range slices.Sorted(maps.Keys(previous)) {
		if id == r.currentID {
			continue
		}
		if err := validateID(id); err != nil {
			return nil, fmt.Errorf("keyring: previous key: %w", err)
		}
		aead, err := newAEAD(previous[id])
		if err != nil {
			return nil, fmt.Errorf("keyring: previous key: %w", err)
		}
		r.keys[id] = aead
	}
	return r, nil
}

// newAEAD returns AES-256-GCM under key with a random nonce prepended to
// each sealed message.
func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCMWithRandomNonce(block)
}

// CurrentID returns the id of the current key, or "" when there is none.
func (r *Ring) CurrentID() string { return r.currentID }

// Wrap seals dataKey (KeySize bytes) with the current key and returns that
// key's id and nonce || ciphertext || tag. Without a current key it returns
// storage.ErrEncryptionKeyMissing.
func (r *Ring) Wrap(dataKey []byte) (keyID string, wrapped []byte, err error) {
	if r.current == nil {
		return "", nil, storage.ErrEncryptionKeyMissing
	}
	if len(dataKey) != KeySize {
		return "", nil, fmt.Errorf("keyring: data key is %d bytes, want %d", len(dataKey), KeySize)
	}
	return r.currentID, r.current.Seal(nil, nil, dataKey, additionalData(r.currentID)), nil
}

// Unwrap opens a data key wrapped under the key keyID, current or previous.
// An id the ring does not hold is storage.ErrEncryptionKeyUnknown; a
// wrapped key that fails authentication (tampered, truncated, or recorded
// with another id) is storage.ErrBlobCorrupt.
func (r *Ring) Unwrap(keyID string, wrapped []byte) ([]byte, error) {
	aead, ok := r.keys[keyID]
	if !ok {
		return nil, storage.ErrEncryptionKeyUnknown.Wrap(fmt.Errorf("key id %q is not configured", keyID))
	}
	dataKey, err := aead.Open(nil, nil, wrapped, additionalData(keyID))
	if err != nil {
		return nil, storage.ErrBlobCorrupt.Wrap(fmt.Errorf("data key wrapped under key id %q failed authentication", keyID))
	}
	return dataKey, nil
}

func additionalData(keyID string) []byte {
	return append([]byte(domain), keyID...)
}
