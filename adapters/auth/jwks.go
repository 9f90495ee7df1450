package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// keySet is the issuer's signing keys (an oidc.KeySet), read from its
// jwks_uri and kept. It reads them again when a token names a key it does
// not hold — the OIDC rotation rule — but a token that a held key refuses
// is refused without asking the issuer, and after a reading that did not
// bring the key a token named, the next waits refetchPause: forged tokens
// cost the issuer at most one request per pause, not one each (go-oidc's
// RemoteKeySet reads the keys again on every signature it cannot check).
type keySet struct {
	url    string
	client *http.Client
	algs   []jose.SignatureAlgorithm
	now    func() time.Time

	fetch sync.Mutex // one reading at a time

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetched bool
	pause   time.Time // no reading for an unknown key before this
}

// refetchPause is the least time between two readings of the keys after a
// reading that did not bring the key a token named.
const refetchPause = 30 * time.Second

// maxJWKSBytes bounds the issuer's key set document.
const maxJWKSBytes = 1 << 20

func newKeySet(url string, client *http.Client, algs []string, now func() time.Time) *keySet {
	k := &keySet{url: url, client: client, now: now}
	for _, a := range algs {
		k.algs = append(k.algs, jose.SignatureAlgorithm(a))
	}
	return k
}

var errSignature = errors.New("failed to verify token signature")

// VerifySignature returns the payload of token when a key of the issuer
// signed it.
func (k *keySet) VerifySignature(ctx context.Context, token string) ([]byte, error) {
	jws, err := jose.ParseSigned(token, k.algs)
	if err != nil {
		return nil, fmt.Errorf("malformed jwt: %w", err)
	}
	kid := jws.Signatures[0].Header.KeyID // ParseSigned refuses a token without a signature
	keys, fetched := k.held()
	if payload, held, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	} else if held && fetched {
		return nil, errSignature // a key we hold refused it: no new key will accept it
	}
	keys, err = k.refetch(ctx, kid)
	if err != nil {
		return nil, err
	}
	if payload, _, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	return nil, errSignature
}

// verifyWith verifies jws with the keys of id kid (every key when kid is
// ""); held reports whether some key has that id.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) (payload []byte, held, ok bool) {
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		held = kid != ""
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, held, true
		}
	}
	return nil, held, false
}

// holds reports whether some key has id kid ("": none has).
func holds(keys []jose.JSONWebKey, kid string) bool {
	return kid != "" && slices.ContainsFunc(keys, func(k jose.JSONWebKey) bool { return k.KeyID == kid })
}

func (k *keySet) held() ([]jose.JSONWebKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.fetched
}

// refetch reads the keys again for a token naming kid, unless a reading
// that did not bring a named key was less than refetchPause ago, or
// another reading brought kid meanwhile.
func (k *keySet) refetch(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	k.fetch.Lock()
	defer k.fetch.Unlock()
	keys, fetched := k.held()
	if fetched && (holds(keys, kid) || k.now().Before(k.pausedUntil())) {
		return keys, nil
	}
	keys, err := k.read(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("fetching keys: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys, k.fetched = keys, true
	if !holds(keys, kid) {
		k.pause = k.now().Add(refetchPause)
	}
	return keys, nil
}

func (k *keySet) pausedUntil() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pause
}

// read fetches the key set document.
func (k *keySet) read(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s: %s", k.url, resp.Status)
	case len(body) > maxJWKSBytes:
		return nil, fmt.Errorf("%s: key set larger than %d bytes", k.url, maxJWKSBytes)
	}
	// Keys of a kind this cannot read are skipped, not the whole set.
	var set struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("%s: %w", k.url, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) == nil {
			keys = append(keys, key)
		}
	}
	return keys, nil
}
