package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"github.com/carebridge/carebridge/adapters/auth"
	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/app"
)

// Defaults of the contract's configuration table.
const (
	defaultHTTPAddr   = ":8080"
	defaultStorageURL = "file://./data/blobs"
	defaultMaxUpload  = 100 << 20
	defaultDevKeyFile = "./data/dev-signing-key.pem"
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

// loadConfig builds app.Config from the environment. Every problem is
// reported at once, one per variable.
func loadConfig(getenv env) (app.Config, slog.Level, error) {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	cfg := app.Config{
		HTTPAddr:        getenv.or("HTTP_ADDR", defaultHTTPAddr),
		DatabaseURL:     getenv.or("DATABASE_URL", ""),
		StorageURL:      getenv.or("CLOUD_STORAGE_CONNECTION_STRING", defaultStorageURL),
		EncryptionKeyID: getenv.or("CLOUD_STORAGE_ENCRYPTION_KEY_ID", ""),
		OIDCIssuerURL:   getenv.or("OIDC_ISSUER_URL", ""),
		OIDCAudience:    getenv.or("OIDC_AUDIENCE", ""),
		MaxUploadBytes:  defaultMaxUpload,
	}
	if cfg.DatabaseURL == "" {
		bad("DATABASE_URL", "is required")
	}
	if s := strings.ToLower(cfg.StorageURL); !strings.HasPrefix(s, "file://") && !strings.HasPrefix(s, "s3://") {
		bad("CLOUD_STORAGE_CONNECTION_STRING", "must start with file:// or s3://")
	}
	if v := getenv.or("CLOUD_STORAGE_ENCRYPTION_KEY", ""); v != "" {
		key, err := keyring.ParseKey(v)
		if err != nil {
			bad("CLOUD_STORAGE_ENCRYPTION_KEY", "%v", err)
		}
		cfg.EncryptionKey = key
	} else if cfg.EncryptionKeyID != "" {
		bad("CLOUD_STORAGE_ENCRYPTION_KEY_ID", "is set but CLOUD_STORAGE_ENCRYPTION_KEY is not")
	}
	if v := getenv.or("CLOUD_STORAGE_PREVIOUS_KEYS", ""); v != "" {
		prev, err := keyring.ParsePrevious(v)
		if err != nil {
			bad("CLOUD_STORAGE_PREVIOUS_KEYS", "%v", err)
		}
		cfg.PreviousKeys = prev
	}
	if v := getenv.or("MAX_UPLOAD_BYTES", ""); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			bad("MAX_UPLOAD_BYTES", "must be a positive number of bytes, got %q", v)
		}
		cfg.MaxUploadBytes = n
	}

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
		key, err := auth.LoadOrCreateDevKey(getenv.or("DEV_KEY_FILE", defaultDevKeyFile))
		if err != nil {
			bad("DEV_KEY_FILE", "%v", err)
		}
		cfg.DevKey = key
	default:
		if cfg.OIDCIssuerURL == "" {
			bad("OIDC_ISSUER_URL", "is required unless AUTH_DEV_MODE=true")
		}
		if cfg.OIDCAudience == "" {
			bad("OIDC_AUDIENCE", "is required unless AUTH_DEV_MODE=true")
		}
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

	var level slog.Level
	if err := level.UnmarshalText([]byte(getenv.or("LOG_LEVEL", "info"))); err != nil {
		bad("LOG_LEVEL", "must be debug, info, warn or error")
	}
	return cfg, level, errors.Join(errs...)
}

// oneLine folds the joined configuration errors into one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
