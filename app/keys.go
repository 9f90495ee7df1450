package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/adapters/webhook"
)

// The purposes of the service keys: each use gets a key of its own,
// derived from a service key with HMAC-SHA256 over its purpose. Earlier
// versions derived the same way from EHR_CREDENTIALS_KEY or
// CLOUD_STORAGE_ENCRYPTION_KEY, which is why those still open as legacy
// keys.
const (
	purposeWebhookSecrets = "carebridge/webhook-secrets/v1"
	purposeIdempotency    = "carebridge/idempotency/v1"
	purposeSearchCache    = "carebridge/search-cache/v1"
	purposeSearchKeys     = "carebridge/search-keys/v1"
)

// Keys are the service's own keys, resolved (LoadKeys): the first seals
// and keys what is new, every one still opens and matches.
type Keys []keyring.Named

// LoadKeys resolves the service keys: configured (SERVICE_KEYS) when there
// are any, else the key kept in PostgreSQL, generated on first use and
// shared by every instance; then legacy, the key material earlier versions
// derived these keys from, which only opens. The service and the admin CLI
// both call it, so they agree on the keys.
func LoadKeys(ctx context.Context, db *postgres.Store, configured, legacy []keyring.Named) (Keys, error) {
	keys := Keys(configured)
	if len(keys) == 0 {
		k, err := db.ServiceKey(ctx)
		if err != nil {
			return nil, err
		}
		keys = Keys{{ID: postgres.GeneratedKeyID, Key: k}}
	}
	for i, k := range keys {
		if len(k.Key) != keyring.KeySize {
			return nil, fmt.Errorf("service key %d is %d bytes, want %d", i+1, len(k.Key), keyring.KeySize)
		}
	}
	return append(keys[:len(keys):len(keys)], legacy...), nil
}

// derive returns the key of purpose under each service key, in order.
func (k Keys) derive(purpose string) [][]byte {
	out := make([][]byte, len(k))
	for i, n := range k {
		m := hmac.New(sha256.New, n.Key)
		m.Write([]byte(purpose))
		out[i] = m.Sum(nil)
	}
	return out
}

// WebhookSealer seals webhook secrets under the first key and opens those
// sealed under any.
func (k Keys) WebhookSealer() (*webhook.Sealer, error) {
	if len(k) == 0 {
		return nil, errors.New("no service key")
	}
	keys := k.derive(purposeWebhookSecrets)
	return webhook.NewSealer(keys[0], keys[1:]...)
}

// cacheKey seals what is cached in Redis: the first key's alone (a value
// cached under an older key is a miss).
func (k Keys) cacheKey() []byte { return k.derive(purposeSearchCache)[0] }

// searchKeyKey keys the names the search gateway gives what it caches:
// the first key's alone (a name under an older key is a miss).
func (k Keys) searchKeyKey() []byte { return k.derive(purposeSearchKeys)[0] }

// fingerprintKeys key the Idempotency-Key fingerprints, the first's first.
func (k Keys) fingerprintKeys() [][]byte { return k.derive(purposeIdempotency) }
