// Package ehrconfig reads the EHR systems file (EHR_CONFIG, YAML): the EHR
// systems the search asks, how to reach and authenticate to each, and the
// system behind the appointment and agent endpoints.
//
// The file is decoded strictly (an unknown key is an error), validated as a
// whole (every problem is reported at once, joined with errors.Join, each
// naming the system and the field and never a secret value) and returned
// with Go-typed fields and defaults applied.
//
// Secrets (client_secret, private_key, api_key, password) are written either as
// "enc:v1:<base64url of nonce||ciphertext>", sealed with AES-256-GCM under
// EHR_CREDENTIALS_KEY (see EncryptSecret), or as "env:NAME", read from the
// environment variable NAME. Plaintext secrets are refused.
//
// Defaults and bounds:
//
//   - search_endpoint: the adapter kind's default (AdapterRules:
//     "/Patient" for fhir, "patients.search" for wsbot);
//
//   - search_types: [patient_record] (the only known type);
//
//   - timeout: 5000 ms, from 1 to 120000;
//
//   - retry_attempts: 0 (no retries unless configured, because a search
//     is interactive and every retry adds to the caller's wait), from 0
//     to 10;
//
//   - rate_limit.requests_per_minute: 0 = unlimited, up to 100000;
//
//   - authentication absent (or type none) = no credentials; a field of
//     another authentication type is an error, so a misplaced credential
//     is noticed rather than ignored;
//
//   - api_key_header: X-API-Key;
//
//   - base_url: the adapter kind's scheme (https, or wss for wsbot), and
//     token_url https; http and ws only on a loopback host (127.0.0.0/8,
//     ::1, localhost);
//
//   - private_key_jwt (SMART Backend Services): token_url, client_id,
//     key_id, algorithm RS384 (an RSA private_key of at least 2048 bits)
//     or ES384 (a P-384 EC key), private_key a PEM (PKCS #8, PKCS #1 or SEC 1) given as a secret.
//
//   - sync.interval: how often the system is polled for the appointment
//     changes made in the EHR itself, a Go duration ("60s", "2m"); "0s"
//     turns it off; else from MinSyncInterval to MaxSyncInterval. Absent:
//     DefaultSyncInterval for the integration EHRs (integration.ehr and
//     the by_business values), off for the others (see SyncInterval).
//
//   - propagate_trace: false. true sends the W3C traceparent of each
//     call's span to the system (when traces are on), so its own traces
//     join Carebridge's; off by default, as the EHR is past a trust
//     boundary. Only for the adapter kinds that allow it (fhir: the bot
//     protocol has no place for it).
//
// At least one system is required: a file without systems is taken for a
// mistake (leave EHR_CONFIG unset to run without EHRs).
//
// Practices: a system's businesses (UUIDs) are the businesses it serves;
// without them it serves every business. integration.by_business gives some
// businesses another integration EHR, which must exist and serve that
// business. See Serves, IntegrationFor and MultiPractice.
package ehrconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Limits and defaults of the EHR systems file.
const (
	// MaxFileSize is the largest EHR systems file accepted.
	MaxFileSize = 1 << 20
	// MaxNameLen is the longest system name.
	MaxNameLen = 64

	DefaultTimeout       = 5000 * time.Millisecond
	MaxTimeout           = 120000 * time.Millisecond
	DefaultRetryAttempts = 0
	MaxRetryAttempts     = 10
	MaxRequestsPerMinute = 100000
	DefaultAPIKeyHeader  = "X-API-Key"

	// DefaultSyncInterval is the sync interval of an integration EHR
	// without sync.interval.
	DefaultSyncInterval = 60 * time.Second
	// MinSyncInterval and MaxSyncInterval bound a sync.interval that is
	// not 0s (off).
	MinSyncInterval = time.Second
	MaxSyncInterval = 24 * time.Hour
)

// Adapter names the client that talks to a system: the name of an adapter
// kind given to Parse (AdapterRules.Name).
type Adapter string

// SearchType is a kind of record a system is searched for.
type SearchType string

// SearchPatientRecord is the only search type known so far.
const SearchPatientRecord SearchType = "patient_record"

// AuthType is how Carebridge authenticates to a system.
type AuthType string

const (
	AuthNone   AuthType = "none"    // authentication absent
	AuthOAuth2 AuthType = "oauth2"  // client credentials grant
	AuthAPIKey AuthType = "api_key" // a key in a header
	AuthBasic  AuthType = "basic"   // HTTP Basic
	// AuthPrivateKeyJWT is SMART Backend Services: client credentials
	// with a client assertion signed by the private key.
	AuthPrivateKeyJWT AuthType = "private_key_jwt"
)

// Config is the parsed, validated EHR systems file.
type Config struct {
	Systems     []System
	Integration Integration
}

// Integration names the system behind /appointment and /agents.
type Integration struct {
	EHR string // a System.Name, or "" when none is configured
	// ByBusiness names another system for some businesses (keys are
	// lower-case UUIDs); nil when the file has none.
	ByBusiness map[string]string
}

// System is one EHR system.
type System struct {
	Name           string
	Adapter        Adapter
	BaseURL        string // http(s) for fhir, ws(s) for wsbot; never with user info
	SearchEndpoint string // a path for fhir, an action name for wsbot
	SearchTypes    []SearchType
	Sites          []string // filters.location values served; a location filter skips a system without them
	// Businesses are the businesses served (lower-case UUIDs); empty: every
	// business.
	Businesses    []string
	Auth          Auth
	RateLimit     RateLimit
	Timeout       time.Duration // per request
	RetryAttempts int
	// SyncInterval is how often the system is polled for the appointment
	// changes made in the EHR itself; 0 is off. Parse fills in the
	// default (see SyncInterval).
	SyncInterval time.Duration
	// PropagateTrace sends the W3C traceparent of each call to the system
	// (propagate_trace; only for the adapter kinds that allow it, see
	// AdapterRules.PropagateTrace). Default false.
	PropagateTrace bool
}

// Auth holds a system's credentials, secrets already decrypted. Printing or
// logging it shows no secret.
type Auth struct {
	Type AuthType

	// oauth2 and private_key_jwt
	TokenURL     string
	ClientID     string
	ClientSecret Secret // oauth2
	Scopes       []string

	// private_key_jwt
	PrivateKey Secret // PEM
	KeyID      string
	Algorithm  string // RS384 or ES384

	// api_key
	APIKey       Secret
	APIKeyHeader string

	// basic
	Username string
	Password Secret
}

// RateLimit bounds the calls made to a system.
type RateLimit struct {
	RequestsPerMinute int // 0 = unlimited
}

// System returns the system called name.
func (c *Config) System(name string) (System, bool) {
	for _, s := range c.Systems {
		if s.Name == name {
			return s, true
		}
	}
	return System{}, false
}

// SyncInterval returns the effective sync interval of the system called
// name: its sync.interval when the file sets it (0s: off), else
// DefaultSyncInterval for an integration EHR (integration.ehr or a
// by_business value) and 0 (off) for the others. It is 0 for an unknown
// name.
func (c *Config) SyncInterval(name string) time.Duration {
	s, _ := c.System(name)
	return s.SyncInterval
}

// isIntegration reports whether the system called name is behind the
// appointment endpoints for some business.
func (c *Config) isIntegration(name string) bool {
	if name == "" {
		return false
	}
	for _, n := range c.Integration.ByBusiness {
		if n == name {
			return true
		}
	}
	return c.Integration.EHR == name
}

// Serves reports whether the system called name exists and serves the
// business businessID (a UUID, any case).
func (c *Config) Serves(name, businessID string) bool {
	s, ok := c.System(name)
	return ok && s.serves(strings.ToLower(businessID))
}

func (s System) serves(businessID string) bool {
	return len(s.Businesses) == 0 || slices.Contains(s.Businesses, businessID)
}

// IntegrationFor returns the integration EHR of the business businessID:
// integration.by_business[businessID] when set, else integration.ehr when
// that system serves the business; ok is false when it has none.
func (c *Config) IntegrationFor(businessID string) (name string, ok bool) {
	id := strings.ToLower(businessID)
	if name, ok := c.Integration.ByBusiness[id]; ok {
		return name, true
	}
	if c.Integration.EHR != "" && c.Serves(c.Integration.EHR, id) {
		return c.Integration.EHR, true
	}
	return "", false
}

// MultiPractice reports whether some system is bound to businesses: the
// deployment then serves several practices, each from its own systems.
func (c *Config) MultiPractice() bool {
	for _, s := range c.Systems {
		if len(s.Businesses) > 0 {
			return true
		}
	}
	return false
}

// LogValue describes the credentials without their secrets.
func (a Auth) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("type", string(a.Type))}
	switch a.Type {
	case AuthOAuth2:
		attrs = append(attrs, slog.String("token_url", a.TokenURL), slog.String("client_id", a.ClientID),
			slog.Any("client_secret", a.ClientSecret), slog.Any("scopes", a.Scopes))
	case AuthPrivateKeyJWT:
		attrs = append(attrs, slog.String("token_url", a.TokenURL), slog.String("client_id", a.ClientID),
			slog.Any("private_key", a.PrivateKey), slog.String("key_id", a.KeyID),
			slog.String("algorithm", a.Algorithm), slog.Any("scopes", a.Scopes))
	case AuthAPIKey:
		attrs = append(attrs, slog.String("api_key_header", a.APIKeyHeader), slog.Any("api_key", a.APIKey))
	case AuthBasic:
		attrs = append(attrs, slog.String("username", a.Username), slog.Any("password", a.Password))
	}
	return slog.GroupValue(attrs...)
}

// LogValue describes the system without its secrets.
func (s System) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", s.Name),
		slog.String("adapter", string(s.Adapter)),
		slog.String("base_url", s.BaseURL),
		slog.String("search_endpoint", s.SearchEndpoint),
		slog.Any("sites", s.Sites),
		slog.Any("businesses", s.Businesses),
		slog.Any("authentication", s.Auth),
		slog.Int("requests_per_minute", s.RateLimit.RequestsPerMinute),
		slog.Int64("timeout_ms", s.Timeout.Milliseconds()),
		slog.Int("retry_attempts", s.RetryAttempts),
		slog.String("sync_interval", s.SyncInterval.String()),
		slog.Bool("propagate_trace", s.PropagateTrace),
	)
}

// The file as written.
type (
	rawFile struct {
		Systems     []rawSystem     `yaml:"ehr_systems"`
		Integration *rawIntegration `yaml:"integration"`
	}
	rawIntegration struct {
		EHR        string            `yaml:"ehr"`
		ByBusiness map[string]string `yaml:"by_business"`
	}
	rawSystem struct {
		Name           string        `yaml:"name"`
		Adapter        string        `yaml:"adapter"`
		BaseURL        string        `yaml:"base_url"`
		SearchEndpoint string        `yaml:"search_endpoint"`
		SearchTypes    []string      `yaml:"search_types"`
		Sites          []string      `yaml:"sites"`
		Businesses     *[]string     `yaml:"businesses"`
		Authentication *rawAuth      `yaml:"authentication"`
		RateLimit      *rawRateLimit `yaml:"rate_limit"`
		Timeout        *int          `yaml:"timeout"`
		RetryAttempts  *int          `yaml:"retry_attempts"`
		Sync           *rawSync      `yaml:"sync"`
		PropagateTrace bool          `yaml:"propagate_trace"`
	}
	rawSync struct {
		Interval *string `yaml:"interval"`
	}
	rawAuth struct {
		Type         string   `yaml:"type"`
		TokenURL     string   `yaml:"token_url"`
		ClientID     string   `yaml:"client_id"`
		ClientSecret string   `yaml:"client_secret"`
		Scopes       []string `yaml:"scopes"`
		PrivateKey   string   `yaml:"private_key"`
		KeyID        string   `yaml:"key_id"`
		Algorithm    string   `yaml:"algorithm"`
		APIKey       string   `yaml:"api_key"`
		APIKeyHeader string   `yaml:"api_key_header"`
		Username     string   `yaml:"username"`
		Password     string   `yaml:"password"`
	}
	rawRateLimit struct {
		RequestsPerMinute *int `yaml:"requests_per_minute"`
	}
)

// Load reads and parses the EHR systems file at path; see Parse.
func Load(adapters []AdapterRules, path string, credentialsKey []byte, getenv func(string) string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open EHR systems file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read EHR systems file: %w", err)
	}
	return Parse(adapters, data, credentialsKey, getenv)
}

// Parse decodes and validates an EHR systems file, whose systems may name
// the adapter kinds of adapters (in the order the errors list them).
// credentialsKey (32
// bytes, EHR_CREDENTIALS_KEY; nil when unset) decrypts enc:v1: secrets and
// getenv (os.Getenv in production; nil means no variables) resolves env:
// secrets. Every problem is reported at once, joined with errors.Join.
func Parse(adapters []AdapterRules, data []byte, credentialsKey []byte, getenv func(string) string) (*Config, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("EHR systems file is larger than %d bytes", MaxFileSize)
	}
	v := validator{secrets: &secretResolver{key: credentialsKey, getenv: getenv}, adapters: adapters}
	raw, err := v.decode(data)
	if err != nil {
		return nil, err
	}
	if len(credentialsKey) != 0 && len(credentialsKey) != KeySize {
		v.add("EHR_CREDENTIALS_KEY", "must be %d bytes, got %d", KeySize, len(credentialsKey))
	}
	cfg := &Config{}
	if len(raw.Systems) == 0 {
		v.add("ehr_systems", "at least one system is required")
	}
	var seen map[string]int
	cfg.Systems, seen = v.systems(raw.Systems)
	if raw.Integration != nil && raw.Integration.EHR != "" {
		if _, ok := seen[raw.Integration.EHR]; !ok {
			v.add("integration.ehr", "names no system in ehr_systems")
		}
		cfg.Integration.EHR = raw.Integration.EHR
	}
	if raw.Integration != nil {
		cfg.Integration.ByBusiness = v.byBusiness(raw.Integration.ByBusiness, cfg)
	}
	if err := errors.Join(v.errs...); err != nil {
		return nil, err
	}
	cfg.defaultSync(raw.Systems)
	return cfg, nil
}

// decode decodes the one YAML document of data. A type error (an unknown
// key, a string for a number) goes among v's errors, and the rest of the
// file, decoded all the same, is validated too; any other fault ends the
// parse.
func (v *validator) decode(data []byte) (rawFile, error) {
	var raw rawFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return raw, errors.New("EHR systems file is empty")
		}
		if _, ok := errors.AsType[*yaml.TypeError](err); !ok {
			return raw, fmt.Errorf("EHR systems file: %s", yamlError(err))
		}
		v.errs = append(v.errs, fmt.Errorf("EHR systems file: %s", yamlError(err)))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return raw, errors.New("EHR systems file: more than one YAML document")
	}
	return raw, nil
}

// systems validates each system of raw, and that no two share a name;
// seen is the index of each name.
func (v *validator) systems(raw []rawSystem) (systems []System, seen map[string]int) {
	seen = map[string]int{}
	for i, rs := range raw {
		s := v.system(i, rs)
		if s.Name != "" {
			if j, dup := seen[s.Name]; dup {
				v.add(fmt.Sprintf("ehr_systems[%d] %s: name", i, s.Name), "duplicates ehr_systems[%d]", j)
			} else {
				seen[s.Name] = i
			}
		}
		systems = append(systems, s)
	}
	return systems, seen
}

// defaultSync gives the integration EHRs whose entry in raw sets no sync
// interval the default one.
func (cfg *Config) defaultSync(raw []rawSystem) {
	for i, rs := range raw {
		if (rs.Sync == nil || rs.Sync.Interval == nil) && cfg.isIntegration(cfg.Systems[i].Name) {
			cfg.Systems[i].SyncInterval = DefaultSyncInterval
		}
	}
}

// yamlValue matches the quoted value yaml.v3 puts in its type errors
// ("cannot unmarshal !!str `...` into int"), which may be a secret written
// in the wrong place.
var yamlValue = regexp.MustCompile(" `[^`]*`")

func yamlError(err error) string {
	msgs := []string{err.Error()}
	if te, ok := errors.AsType[*yaml.TypeError](err); ok {
		msgs = te.Errors
	}
	for i, m := range msgs {
		m = yamlValue.ReplaceAllString(m, "")
		msgs[i] = strings.ReplaceAll(m, "ehrconfig.raw", "")
	}
	return strings.Join(msgs, "; ")
}
