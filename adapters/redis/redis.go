// Package redis is the ehr.Cache shared by several service instances
// (REDIS_URL): search results and rate-limit counters live in Redis.
// Search answers are kept in this package's format (answer.go).
//
// Cached values hold patient data, so they never sit in Redis in the
// clear: each is sealed with AES-256-GCM under the cache key given to New,
// with a random nonce, and with the Redis key in the additional data, so a
// value copied to another key does not open. A stored value is
//
//	version (1 byte, 1) || nonce (12 bytes) || ciphertext || tag (16 bytes)
//
// A value that does not open (another key, a rotated cache key, damage) is
// a miss and is deleted. Keys are used as given: the core already hashes
// anything personal out of them. Counters are plain integers.
package redis

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/carebridge/carebridge/core/ehr"
)

const (
	// KeySize is the size of the cache encryption key in bytes.
	KeySize = 32
	// version starts every stored value.
	version byte = 1
	// domain separates this use of the key from any other.
	domain = "carebridge/redis-cache/v1:"
)

var _ ehr.Cache = (*Cache)(nil)

// incrScript counts in a window: INCR, and PEXPIRE when the counter is new
// (or somehow has no expiry), then the count and the time left, in one
// atomic step.
var incrScript = goredis.NewScript(`
local n = redis.call('INCR', KEYS[1])
local ttl = -1
if n > 1 then ttl = redis.call('PTTL', KEYS[1]) end
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
`)

// delIfScript deletes KEYS[1] only while it still holds ARGV[1], so
// dropping an undecryptable value never removes a fresh one written since.
var delIfScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Cache is an ehr.Cache in Redis. It is safe for concurrent use.
type Cache struct {
	client *goredis.Client
	aead   cipher.AEAD
}

// New connects to the Redis server of url (redis:// or rediss://, as
// go-redis's ParseURL accepts), checks it with PING, and returns a cache
// whose values are sealed under key (32 bytes). Errors never contain the
// URL's password nor the key.
func New(ctx context.Context, url string, key []byte) (*Cache, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("redis: cache key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("redis: cache key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("redis: cache key: %w", err)
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis: invalid REDIS_URL: %w", stripURL(err))
	}
	client := goredis.NewClient(opts)
	c := &Cache{client: client, aead: aead}
	if err := c.Ping(ctx); err != nil {
		_ = client.Close() // it never connected; the ping's error is the one to report
		return nil, err
	}
	return c, nil
}

// CheckURL reports whether New would accept url (its syntax; it does not
// connect). Its error never repeats the URL, which may hold a password.
func CheckURL(url string) error {
	_, err := goredis.ParseURL(url)
	return stripURL(err)
}

// stripURL drops the *url.Error wrapper, whose text repeats the whole
// URL, password included.
func stripURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// Ping checks that Redis answers.
func (c *Cache) Ping(ctx context.Context) error {
	if err := c.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: ping: %w", err)
	}
	return nil
}

// Close closes the connections.
func (c *Cache) Close() error { return c.client.Close() }

// Get returns the search answer of key, or false when it is absent,
// expired, or does not decrypt or decode (answer.go).
func (c *Cache) Get(ctx context.Context, key string) (ehr.Answer, bool, error) {
	raw, ok, err := c.getRaw(ctx, key)
	if err != nil || !ok {
		return ehr.Answer{}, false, err
	}
	a, err := decodeAnswer(raw)
	if err != nil {
		return ehr.Answer{}, false, nil // an unreadable entry is a miss
	}
	return a, true, nil
}

// Set stores the search answer a under key for ttl, encoded (answer.go)
// and sealed; a ttl of zero or less removes key.
func (c *Cache) Set(ctx context.Context, key string, a ehr.Answer, ttl time.Duration) error {
	raw, err := encodeAnswer(a)
	if err != nil {
		return fmt.Errorf("redis: encode answer: %w", err)
	}
	return c.setRaw(ctx, key, raw, ttl)
}

// getRaw returns the value of key, or false when it is absent, expired or
// does not decrypt (then it is deleted).
func (c *Cache) getRaw(ctx context.Context, key string) ([]byte, bool, error) {
	stored, err := c.client.Get(ctx, key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redis: get: %w", err)
	}
	value, ok := c.open(key, stored)
	if !ok {
		// Best effort: a failure here only leaves the bad value to expire.
		_ = delIfScript.Run(ctx, c.client, []string{key}, stored).Err()
		return nil, false, nil
	}
	return value, true, nil
}

// setRaw stores value under key for ttl, sealed; a ttl of zero or less
// removes key. Redis keeps expiries in milliseconds: a ttl below one is
// rounded up to one.
func (c *Cache) setRaw(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		if err := c.client.Del(ctx, key).Err(); err != nil {
			return fmt.Errorf("redis: del: %w", err)
		}
		return nil
	}
	sealed, err := c.seal(key, value)
	if err != nil {
		return err
	}
	if err := c.client.Set(ctx, key, sealed, max(ttl, time.Millisecond)).Err(); err != nil {
		return fmt.Errorf("redis: set: %w", err)
	}
	return nil
}

// Incr adds one to the counter key, which starts at zero and expires ttl
// after its first increment, and returns the new count and the time until
// the counter expires. Every instance sharing the Redis server counts in
// the same window. ttl must be at least a millisecond.
func (c *Cache) Incr(ctx context.Context, key string, ttl time.Duration) (int64, time.Duration, error) {
	if ttl < time.Millisecond {
		return 0, 0, errors.New("redis: counter ttl must be at least 1ms")
	}
	res, err := incrScript.Run(ctx, c.client, []string{key}, ttl.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("redis: incr: %w", err)
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("redis: incr: unexpected reply of %d values", len(res))
	}
	return res[0], time.Duration(res[1]) * time.Millisecond, nil
}

// additionalData binds a sealed value to its Redis key.
func additionalData(key string) []byte { return []byte(domain + key) }

func (c *Cache) seal(key string, value []byte) ([]byte, error) {
	ns := c.aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(value)+c.aead.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, fmt.Errorf("redis: nonce: %w", err)
	}
	return c.aead.Seal(out, out[1:], value, additionalData(key)), nil
}

func (c *Cache) open(key string, stored []byte) ([]byte, bool) {
	ns := c.aead.NonceSize()
	if len(stored) < 1+ns+c.aead.Overhead() || stored[0] != version {
		return nil, false
	}
	value, err := c.aead.Open(nil, stored[1:1+ns], stored[1+ns:], additionalData(key))
	if err != nil {
		return nil, false
	}
	if value == nil {
		value = []byte{}
	}
	return value, true
}
