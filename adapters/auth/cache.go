package auth

import (
	"strings"
	"sync"
	"time"

	"github.com/carebridge/carebridge/core"
)

// DefaultCacheTTL is how long a verified token is trusted without checking
// its signature again (never past its expiry). A key removed from the
// issuer's JWKS stops being accepted after at most this long.
const DefaultCacheTTL = 60 * time.Second

// maxCachedTokens bounds the cache; when it is full, expired entries go,
// and if none has expired the cache starts afresh.
const maxCachedTokens = 10000

// tokenCache remembers tokens that passed every check, so the hot path
// skips the signature verification (an ECDSA or RSA verify per request).
// It is keyed by the token itself: a lookup then costs no allocation, and
// the token is already in memory for as long as its request lives.
type tokenCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	actor core.Actor
	until time.Time // min(exp, verified + ttl)
}

func newTokenCache(ttl time.Duration) *tokenCache {
	if ttl <= 0 {
		return nil
	}
	return &tokenCache{ttl: ttl, entries: map[string]cached{}}
}

func (c *tokenCache) get(raw string, now time.Time) (core.Actor, bool) {
	if c == nil {
		return core.Actor{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[raw]
	if !ok || !now.Before(e.until) {
		return core.Actor{}, false
	}
	return e.actor, true
}

func (c *tokenCache) put(raw string, actor core.Actor, exp, now time.Time) {
	if c == nil {
		return
	}
	until := now.Add(c.ttl)
	if exp.Before(until) {
		until = exp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedTokens {
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCachedTokens {
			clear(c.entries)
		}
	}
	c.entries[strings.Clone(raw)] = cached{actor: actor, until: until}
}
