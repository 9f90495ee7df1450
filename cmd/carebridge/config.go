package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/carebridge/carebridge/adapters/auth"
	"github.com/carebridge/carebridge/adapters/clamd"
	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/adapters/redis"
	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/app"
)

// Defaults of the contract's configuration table.
const (
	defaultHTTPAddr   = ":8080"
	defaultStorageURL = "file://./data/blobs"
	defaultMaxUpload  = 100 << 20
	minReadAhead      = 256 << 10 // one read-ahead buffer
	defaultAudience   = "carebridge"
)

// env is the process environment, passed in so tests can supply their own.
type env func(string) string

func (e env) or(name, def string) string {
	if v := strings.TrimSpace(e(name)); v != "" {
		return v
	}
	return def
}

// badFunc records a problem with the variable name.
type badFunc func(name, format string, args ...any)

// loadConfig builds app.Config from the environment: every value parsed
// and checked here, so app.New gets valid values and every problem is
// reported at once, one per variable, before anything connects.
func loadConfig(getenv env) (app.Config, slog.Level, error) {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	cfg := app.Config{}
	loadServerConfig(getenv, &cfg, bad)
	loadStorageConfig(getenv, &cfg, bad)
	loadAuthConfig(getenv, &cfg, bad)
	loadSearchConfig(getenv, &cfg, bad)
	keys, legacy, err := serviceKeys(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.ServiceKeys, cfg.LegacyKeys = keys, legacy
	tracing, err := app.TracingFromEnv(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Tracing = tracing

	var level slog.Level
	if err := level.UnmarshalText([]byte(getenv.or("LOG_LEVEL", "info"))); err != nil {
		bad("LOG_LEVEL", "must be debug, info, warn or error")
	}
	return cfg, level, errors.Join(errs...)
}

// loadServerConfig reads the listen address, the database and the HTTP
// limits.
func loadServerConfig(getenv env, cfg *app.Config, bad badFunc) {
	cfg.HTTPAddr = getenv.or("HTTP_ADDR", defaultHTTPAddr)
	if _, _, err := net.SplitHostPort(cfg.HTTPAddr); err != nil {
		bad("HTTP_ADDR", "must be host:port or :port, got %q", cfg.HTTPAddr)
	}
	cfg.DatabaseURL = getenv.or("DATABASE_URL", "")
	if cfg.DatabaseURL == "" {
		bad("DATABASE_URL", "is required")
	}
	cfg.MaxUploadBytes = defaultMaxUpload
	if v := getenv.or("MAX_UPLOAD_BYTES", ""); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			bad("MAX_UPLOAD_BYTES", "must be a positive number of bytes, got %q", v)
		}
		cfg.MaxUploadBytes = n
	}
	if v := getenv.or("DOWNLOAD_READAHEAD_BYTES", ""); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < minReadAhead {
			bad("DOWNLOAD_READAHEAD_BYTES", "must be a number of bytes of at least %d (one buffer), got %q", minReadAhead, v)
		}
		cfg.ReadAheadBytes = n
	}
	for _, o := range strings.Split(getenv.or("CORS_ALLOWED_ORIGINS", ""), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || strings.Contains(o, "*") {
			bad("CORS_ALLOWED_ORIGINS", "%q is not an exact origin such as https://app.example.com", o)
			continue
		}
		cfg.CORSAllowedOrigins = append(cfg.CORSAllowedOrigins, o)
	}
}

// loadScannerLimits reads how many scans an instance keeps open at once
// (CLAMD_MAX_CONNECTIONS: the instances together should stay within
// clamd's MaxThreads) and how long an upload waits for one before it is
// refused as busy (CLAMD_WAIT_TIMEOUT).
func loadScannerLimits(getenv env, sc *clamd.Config, bad badFunc) {
	if v := getenv.or("CLAMD_MAX_CONNECTIONS", ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			bad("CLAMD_MAX_CONNECTIONS", "must be a number of connections from 1 to 1000, got %q", v)
		}
		sc.MaxConns = n
	}
	if v := getenv.or("CLAMD_WAIT_TIMEOUT", ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			bad("CLAMD_WAIT_TIMEOUT", "must be a positive Go duration such as 10s, got %q", v)
		}
		sc.WaitTimeout = d
	}
}

// loadStorageConfig reads the blob store, its encryption keys and the
// malware scanner.
func loadStorageConfig(getenv env, cfg *app.Config, bad badFunc) {
	objects, err := parseObjectStore(getenv.or("CLOUD_STORAGE_CONNECTION_STRING", defaultStorageURL))
	if err != nil {
		bad("CLOUD_STORAGE_CONNECTION_STRING", "%v", err)
	}
	cfg.Objects = objects
	if v := getenv.or("CLAMD_ADDRESS", ""); v != "" {
		network, address, err := clamd.ParseAddress(v)
		if err != nil {
			bad("CLAMD_ADDRESS", "must be tcp://host:port or unix:///path/to/clamd.sock: %v", err)
		}
		cfg.Scanner = &clamd.Config{Network: network, Address: address}
		loadScannerLimits(getenv, cfg.Scanner, bad)
	}

	id := getenv.or("CLOUD_STORAGE_ENCRYPTION_KEY_ID", "")
	var current []byte
	var previous map[string][]byte
	ok := true
	if v := getenv.or("CLOUD_STORAGE_ENCRYPTION_KEY", ""); v != "" {
		if current, err = keyring.ParseKey(v); err != nil {
			bad("CLOUD_STORAGE_ENCRYPTION_KEY", "%v", err)
			ok = false
		}
	} else if id != "" {
		bad("CLOUD_STORAGE_ENCRYPTION_KEY_ID", "is set but CLOUD_STORAGE_ENCRYPTION_KEY is not")
		ok = false
	}
	if v := getenv.or("CLOUD_STORAGE_PREVIOUS_KEYS", ""); v != "" {
		if previous, err = keyring.ParsePrevious(v); err != nil {
			bad("CLOUD_STORAGE_PREVIOUS_KEYS", "%v", err)
			ok = false
		}
	}
	if !ok || (current == nil && previous == nil) {
		return
	}
	ring, err := keyring.New(id, current, previous)
	if err != nil {
		bad("CLOUD_STORAGE_ENCRYPTION_KEY", "%v", err)
		return
	}
	cfg.BlobKeys = ring
}

// parseObjectStore reads a blob connection string: file://dir or
// s3://… (see the contract). Its errors never repeat the secret key.
func parseObjectStore(s string) (app.ObjectStore, error) {
	scheme, rest, _ := strings.Cut(s, "://")
	switch strings.ToLower(scheme) {
	case "file":
		if rest == "" {
			return app.ObjectStore{}, errors.New("file:// names no directory")
		}
		return app.ObjectStore{Dir: rest}, nil
	case "s3":
		c, err := s3.ParseConnectionString(s)
		if err != nil {
			return app.ObjectStore{}, err
		}
		return app.ObjectStore{S3: &c}, nil
	}
	return app.ObjectStore{}, errors.New("must start with file:// or s3://")
}

// loadAuthConfig reads how tokens are verified: an OIDC issuer, or the
// local dev key (AUTH_DEV_MODE, loopback only).
func loadAuthConfig(getenv env, cfg *app.Config, bad badFunc) {
	cfg.OIDCIssuerURL = getenv.or("OIDC_ISSUER_URL", "")
	cfg.OIDCAudience = getenv.or("OIDC_AUDIENCE", "")
	devMode, err := strconv.ParseBool(getenv.or("AUTH_DEV_MODE", "false"))
	if err != nil {
		bad("AUTH_DEV_MODE", "must be true or false")
	}
	switch {
	case devMode && !auth.IsLoopback(cfg.HTTPAddr):
		bad("AUTH_DEV_MODE", "is refused unless HTTP_ADDR binds only loopback (e.g. 127.0.0.1:8080), got %q", cfg.HTTPAddr)
	case devMode:
		if cfg.OIDCAudience == "" {
			cfg.OIDCAudience = defaultAudience
		}
		path, err := devKeyFile(getenv)
		if err != nil {
			bad("DEV_KEY_FILE", "%v", err)
			break
		}
		key, err := auth.LoadOrCreateDevKey(path)
		if err != nil {
			bad("DEV_KEY_FILE", "%v", err)
		}
		cfg.DevKey = key
	default:
		if cfg.OIDCIssuerURL == "" {
			bad("OIDC_ISSUER_URL", "is required unless AUTH_DEV_MODE=true")
		} else if u, err := url.Parse(cfg.OIDCIssuerURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("OIDC_ISSUER_URL", "must be an https:// (or http://) URL, got %q", cfg.OIDCIssuerURL)
		}
		if cfg.OIDCAudience == "" {
			bad("OIDC_AUDIENCE", "is required unless AUTH_DEV_MODE=true")
		}
	}
}

// Search defaults of the contract.
const (
	defaultSearchCacheTTL  = 60 * time.Second
	defaultSearchRateLimit = 120
)

// loadSearchConfig reads the EHR systems file, the search gateway's
// settings, the event relay's NATS servers and whether practices'
// webhooks may target private addresses.
func loadSearchConfig(getenv env, cfg *app.Config, bad badFunc) {
	cfg.EHR = loadEHRConfig(getenv, bad)
	cfg.EventsNATSURL = getenv.or("EVENTS_NATS_URL", "")
	if cfg.EventsNATSURL != "" && !validNATSURLs(cfg.EventsNATSURL) {
		bad("EVENTS_NATS_URL", "must be nats:// or tls:// URLs, comma-separated")
	}
	allow, err := strconv.ParseBool(getenv.or("WEBHOOK_ALLOW_PRIVATE", "false"))
	if err != nil {
		bad("WEBHOOK_ALLOW_PRIVATE", "must be true or false")
	}
	cfg.WebhookAllowPrivate = allow
	cfg.RedisURL = getenv.or("REDIS_URL", "")
	if s := strings.ToLower(cfg.RedisURL); s != "" && !strings.HasPrefix(s, "redis://") && !strings.HasPrefix(s, "rediss://") && !strings.HasPrefix(s, "unix://") {
		bad("REDIS_URL", "must be a redis://, rediss:// or unix:// URL")
	} else if s != "" {
		if err := redis.CheckURL(cfg.RedisURL); err != nil {
			bad("REDIS_URL", "%v", err)
		}
	}
	cfg.SearchCacheTTL = defaultSearchCacheTTL
	if v := getenv.or("SEARCH_CACHE_TTL", ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			bad("SEARCH_CACHE_TTL", "must be a non-negative Go duration such as 60s, got %q", v)
		}
		cfg.SearchCacheTTL = d
	}
	cfg.SearchRateLimit = defaultSearchRateLimit
	if v := getenv.or("SEARCH_RATE_LIMIT", ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			bad("SEARCH_RATE_LIMIT", "must be a whole number of searches per minute (0: unlimited), got %q", v)
		}
		cfg.SearchRateLimit = n
	}
}

// validNATSURLs reports whether list is comma-separated nats:// or tls://
// URLs, each naming a host. (The value is not repeated in errors: it may
// carry credentials.)
func validNATSURLs(list string) bool {
	for _, s := range strings.Split(list, ",") {
		if !strings.HasPrefix(s, "nats://") && !strings.HasPrefix(s, "tls://") {
			return false
		}
		if u, err := url.Parse(s); err != nil || u.Host == "" {
			return false
		}
	}
	return true
}

// loadEHRConfig reads the EHR systems file EHR_CONFIG (nil when unset),
// its enc: secrets opened with EHR_CREDENTIALS_KEY; start-up and SIGHUP
// both read it so.
func loadEHRConfig(getenv env, bad badFunc) *ehrconfig.Config {
	var credKey []byte
	if v := getenv.or("EHR_CREDENTIALS_KEY", ""); v != "" {
		key, err := keyring.ParseKey(v)
		if err != nil {
			bad("EHR_CREDENTIALS_KEY", "%v", err)
		}
		credKey = key
	}
	path := getenv.or("EHR_CONFIG", "")
	if path == "" {
		return nil
	}
	c, err := ehrkinds.All().Load(path, credKey, getenv)
	if err != nil {
		bad("EHR_CONFIG", "%v", err) // oneLine folds its lines
	}
	return c
}

// The ids of the legacy keys: earlier versions keyed webhook secrets and
// Idempotency-Key fingerprints with keys derived from EHR_CREDENTIALS_KEY,
// else CLOUD_STORAGE_ENCRYPTION_KEY. Both still open (never seal), so
// what they sealed keeps working after an upgrade.
const (
	legacyEHRCredentialsID = "legacy-ehr-credentials"
	legacyBlobID           = "legacy-blob"
)

// serviceKeys reads SERVICE_KEYS (the first seals, the others open; none:
// the key kept in PostgreSQL) and the legacy keys. The service and the
// admin CLI both read their keys with it, and resolve them with
// app.LoadKeys.
func serviceKeys(getenv env) (keys, legacy []keyring.Named, err error) {
	keys, err = keyring.ParseList(getenv.or("SERVICE_KEYS", ""))
	if err != nil {
		return nil, nil, fmt.Errorf("SERVICE_KEYS: %w", err)
	}
	for _, v := range []struct{ name, id string }{
		{"EHR_CREDENTIALS_KEY", legacyEHRCredentialsID},
		{"CLOUD_STORAGE_ENCRYPTION_KEY", legacyBlobID},
	} {
		// A bad value is refused where the variable itself is read.
		if k, err := keyring.ParseKey(getenv.or(v.name, "")); err == nil {
			legacy = append(legacy, keyring.Named{ID: v.id, Key: k})
		}
	}
	return keys, legacy, nil
}

// devKeyFile is where the dev-mode signing key lives: DEV_KEY_FILE, else
// carebridge/dev-signing-key.pem in the user's configuration directory
// ($XDG_CONFIG_HOME, else $HOME/.config). It never depends on the working
// directory, so `serve` and `dev-token` started from different folders
// agree on the key (DEV_KEY_FILE is taken as given).
func devKeyFile(getenv env) (string, error) {
	if p := getenv.or("DEV_KEY_FILE", ""); p != "" {
		return p, nil
	}
	dir := getenv.or("XDG_CONFIG_HOME", "")
	if !filepath.IsAbs(dir) { // the XDG spec ignores a relative value
		home := getenv.or("HOME", "")
		if !filepath.IsAbs(home) {
			return "", errors.New("is unset and there is no $XDG_CONFIG_HOME or $HOME to keep the dev key in; set DEV_KEY_FILE to an absolute path")
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "carebridge", "dev-signing-key.pem"), nil
}

// oneLine folds the joined configuration errors into one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
