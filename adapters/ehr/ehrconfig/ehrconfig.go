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
//   - search_endpoint: "/Patient" for fhir, "patients.search" for wsbot;
//   - search_types: [patient_record] (the only known type);
//   - timeout: 5000 ms, from 1 to 120000;
//   - retry_attempts: 0 (no retries unless configured, because a search
//     is interactive and every retry adds to the caller's wait), from 0
//     to 10;
//   - rate_limit.requests_per_minute: 0 = unlimited, up to 100000;
//   - authentication absent (or type none) = no credentials; a field of
//     another authentication type is an error, so a misplaced credential
//     is noticed rather than ignored;
//   - api_key_header: X-API-Key;
//   - base_url and token_url: https, or wss for wsbot; http and ws only
//     on a loopback host (127.0.0.0/8, ::1, localhost);
//   - private_key_jwt (SMART Backend Services): token_url, client_id,
//     key_id, algorithm RS384 (an RSA private_key of at least 2048 bits)
//     or ES384 (a P-384 EC key), private_key a PEM (PKCS #8, PKCS #1 or SEC 1) given as a secret.
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
	"maps"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
)

// Limits and defaults of the EHR systems file.
const (
	// MaxFileSize is the largest EHR systems file accepted.
	MaxFileSize = 1 << 20
	// MaxNameLen is the longest system name.
	MaxNameLen = 64

	DefaultTimeout             = 5000 * time.Millisecond
	MaxTimeout                 = 120000 * time.Millisecond
	DefaultRetryAttempts       = 0
	MaxRetryAttempts           = 10
	MaxRequestsPerMinute       = 100000
	DefaultAPIKeyHeader        = "X-API-Key"
	DefaultFHIRSearchEndpoint  = "/Patient"
	DefaultWSBotSearchEndpoint = "patients.search"
)

// Adapter names the client that talks to a system.
type Adapter string

const (
	AdapterFHIR  Adapter = "fhir"  // REST, FHIR R4
	AdapterWSBot Adapter = "wsbot" // the WebSocket bot protocol
)

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
func Load(path string, credentialsKey []byte, getenv func(string) string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open EHR systems file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read EHR systems file: %w", err)
	}
	return Parse(data, credentialsKey, getenv)
}

// Parse decodes and validates an EHR systems file. credentialsKey (32
// bytes, EHR_CREDENTIALS_KEY; nil when unset) decrypts enc:v1: secrets and
// getenv (os.Getenv in production; nil means no variables) resolves env:
// secrets. Every problem is reported at once, joined with errors.Join.
func Parse(data []byte, credentialsKey []byte, getenv func(string) string) (*Config, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("EHR systems file is larger than %d bytes", MaxFileSize)
	}
	var raw rawFile
	v := validator{secrets: &secretResolver{key: credentialsKey, getenv: getenv}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("EHR systems file is empty")
		}
		// After a type error (an unknown key, a string for a number)
		// the rest of the file is decoded: validate it too.
		if _, ok := errors.AsType[*yaml.TypeError](err); !ok {
			return nil, fmt.Errorf("EHR systems file: %s", yamlError(err))
		}
		v.errs = append(v.errs, fmt.Errorf("EHR systems file: %s", yamlError(err)))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("EHR systems file: more than one YAML document")
	}

	if len(credentialsKey) != 0 && len(credentialsKey) != KeySize {
		v.add("EHR_CREDENTIALS_KEY", "must be %d bytes, got %d", KeySize, len(credentialsKey))
	}
	cfg := &Config{}
	if len(raw.Systems) == 0 {
		v.add("ehr_systems", "at least one system is required")
	}
	seen := map[string]int{}
	for i, rs := range raw.Systems {
		s := v.system(i, rs)
		if s.Name != "" {
			if j, dup := seen[s.Name]; dup {
				v.add(fmt.Sprintf("ehr_systems[%d] %s: name", i, s.Name), "duplicates ehr_systems[%d]", j)
			} else {
				seen[s.Name] = i
			}
		}
		cfg.Systems = append(cfg.Systems, s)
	}
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
	return cfg, nil
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

type validator struct {
	errs    []error
	secrets *secretResolver
}

func (v *validator) add(where, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
}

func (v *validator) system(i int, rs rawSystem) System {
	at := fmt.Sprintf("ehr_systems[%d]", i)
	s := System{
		Name:           rs.Name,
		Adapter:        Adapter(rs.Adapter),
		BaseURL:        rs.BaseURL,
		SearchEndpoint: rs.SearchEndpoint,
		Sites:          rs.Sites,
		Timeout:        DefaultTimeout,
		RetryAttempts:  DefaultRetryAttempts,
	}
	switch {
	case rs.Name == "":
		v.add(at+": name", "is required")
	case !validName(rs.Name):
		v.add(at+": name", "must be 1 to %d letters, digits, '.', '_' or '-'", MaxNameLen)
		s.Name = ""
	default:
		at += " " + rs.Name
	}
	v.endpoint(at, &s)
	s.SearchTypes = v.searchTypes(at, rs.SearchTypes)
	v.sites(at, rs.Sites)
	v.limits(at, rs, &s)
	if rs.Businesses != nil {
		s.Businesses = v.businesses(at, *rs.Businesses)
	}
	s.Auth = v.auth(at+": authentication", rs.Authentication)
	return s
}

// endpoint checks the adapter, its base URL and its search endpoint (a
// path for FHIR, an action for the bot), defaulting the endpoint.
func (v *validator) endpoint(at string, s *System) {
	switch s.Adapter {
	case AdapterFHIR:
		v.url(at+": base_url", s.BaseURL, "https", "http")
		if s.SearchEndpoint == "" {
			s.SearchEndpoint = DefaultFHIRSearchEndpoint
		} else if !validPath(s.SearchEndpoint) {
			v.add(at+": search_endpoint", "must be a path beginning with '/', without spaces, '?' or '#'")
		}
	case AdapterWSBot:
		v.url(at+": base_url", s.BaseURL, "wss", "ws")
		if s.SearchEndpoint == "" {
			s.SearchEndpoint = DefaultWSBotSearchEndpoint
		} else if !validAction(s.SearchEndpoint) {
			v.add(at+": search_endpoint", "must be an action name of letters, digits, '.', '_' or '-'")
		}
	case "":
		v.add(at+": adapter", "is required (fhir or wsbot)")
	default:
		v.add(at+": adapter", "must be fhir or wsbot")
	}
}

func (v *validator) searchTypes(at string, raw []string) []SearchType {
	if len(raw) == 0 {
		return []SearchType{SearchPatientRecord}
	}
	var out []SearchType
	for j, t := range raw {
		switch st := SearchType(t); {
		case st != SearchPatientRecord:
			v.add(fmt.Sprintf("%s: search_types[%d]", at, j), "unknown search type (known: patient_record)")
		case containsBefore(raw, j):
			v.add(fmt.Sprintf("%s: search_types[%d]", at, j), "duplicate")
		default:
			out = append(out, st)
		}
	}
	return out
}

func (v *validator) sites(at string, sites []string) {
	for j, site := range sites {
		switch {
		case site == "" || strings.TrimSpace(site) != site:
			v.add(fmt.Sprintf("%s: sites[%d]", at, j), "must be non-empty, without surrounding spaces")
		case len(site) > 200 || hasControl(site):
			v.add(fmt.Sprintf("%s: sites[%d]", at, j), "must be at most 200 characters, without control characters")
		case containsBefore(sites, j):
			v.add(fmt.Sprintf("%s: sites[%d]", at, j), "duplicate")
		}
	}
}

// limits checks the time-out, the retries and the rate limit, keeping the
// defaults where a value is absent or out of range.
func (v *validator) limits(at string, rs rawSystem, s *System) {
	if rs.Timeout != nil {
		ms := *rs.Timeout
		if ms < 1 || ms > int(MaxTimeout/time.Millisecond) {
			v.add(at+": timeout", "must be from 1 to %d milliseconds", MaxTimeout/time.Millisecond)
		} else {
			s.Timeout = time.Duration(ms) * time.Millisecond
		}
	}
	if rs.RetryAttempts != nil {
		n := *rs.RetryAttempts
		if n < 0 || n > MaxRetryAttempts {
			v.add(at+": retry_attempts", "must be from 0 to %d", MaxRetryAttempts)
		} else {
			s.RetryAttempts = n
		}
	}
	if rs.RateLimit != nil && rs.RateLimit.RequestsPerMinute != nil {
		n := *rs.RateLimit.RequestsPerMinute
		if n < 0 || n > MaxRequestsPerMinute {
			v.add(at+": rate_limit.requests_per_minute", "must be from 0 (unlimited) to %d", MaxRequestsPerMinute)
		} else {
			s.RateLimit.RequestsPerMinute = n
		}
	}
}

// businesses checks a system's businesses: UUIDs, at least one, no
// duplicate; they come back in lower case.
func (v *validator) businesses(at string, raw []string) []string {
	if len(raw) == 0 {
		v.add(at+": businesses", "must name at least one business (omit it to serve every business)")
	}
	var out []string
	for j, b := range raw {
		id, ok := businessID(b)
		switch {
		case !ok:
			v.add(fmt.Sprintf("%s: businesses[%d]", at, j), "%s", notUUID(b))
		case slices.Contains(out, id):
			v.add(fmt.Sprintf("%s: businesses[%d]", at, j), "duplicate")
		default:
			out = append(out, id)
		}
	}
	return out
}

// byBusiness checks integration.by_business: each key a business UUID,
// each value a system of cfg that serves that business. Its keys come back
// in lower case.
func (v *validator) byBusiness(raw map[string]string, cfg *Config) map[string]string {
	if len(raw) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(raw)) // errors in a stable order
	out := make(map[string]string, len(raw))
	for _, k := range keys {
		name := raw[k]
		id, ok := businessID(k)
		if !ok {
			v.add("integration.by_business", "%s", notUUID(k))
			continue
		}
		at := "integration.by_business[" + id + "]"
		if _, dup := out[id]; dup {
			v.add(at, "duplicate (the same business in another case)")
			continue
		}
		s, found := cfg.System(name)
		switch {
		case name == "":
			v.add(at, "must name a system")
		case !found:
			v.add(at, "names no system in ehr_systems (%q)", safeName(name))
		case !s.serves(id):
			v.add(at, "system %s does not serve this business (add it to its businesses)", name)
		}
		out[id] = name
	}
	return out
}

// businessID returns s, a UUID in its 8-4-4-4-12 hexadecimal form, in lower
// case; ok is false when s is not one.
func businessID(s string) (id string, ok bool) {
	if len(s) != 36 {
		return "", false
	}
	for i, c := range []byte(s) {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return "", false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// notUUID says that s is not a business UUID, quoting it when it is short
// and printable (never a secret: a businesses entry or by_business key).
func notUUID(s string) string {
	return fmt.Sprintf("%q is not a business UUID", safeName(s))
}

// safeName is s cut to 64 bytes with control characters replaced, to quote
// a written value in an error.
func safeName(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}

func (v *validator) auth(at string, ra *rawAuth) Auth {
	if ra == nil {
		return Auth{Type: AuthNone}
	}
	a := Auth{
		Type:         AuthType(ra.Type),
		TokenURL:     ra.TokenURL,
		ClientID:     ra.ClientID,
		Scopes:       ra.Scopes,
		KeyID:        ra.KeyID,
		Algorithm:    ra.Algorithm,
		APIKeyHeader: ra.APIKeyHeader,
		Username:     ra.Username,
	}
	var allowed []string
	switch a.Type {
	case AuthOAuth2:
		allowed = []string{"token_url", "client_id", "client_secret", "scopes"}
		v.url(at+".token_url", ra.TokenURL, "https", "http")
		if ra.ClientID == "" {
			v.add(at+".client_id", "is required for oauth2")
		}
		a.ClientSecret = v.secret(at+".client_secret", ra.ClientSecret, "oauth2")
		v.scopes(at, ra.Scopes)
	case AuthPrivateKeyJWT:
		allowed = []string{"token_url", "client_id", "scopes", "private_key", "key_id", "algorithm"}
		a.PrivateKey = v.privateKeyJWT(at, ra)
	case AuthAPIKey:
		allowed = []string{"api_key", "api_key_header"}
		a.APIKey = v.secret(at+".api_key", ra.APIKey, "api_key")
		if a.APIKeyHeader == "" {
			a.APIKeyHeader = DefaultAPIKeyHeader
		} else if !validHeaderName(a.APIKeyHeader) {
			v.add(at+".api_key_header", "is not a valid HTTP header name")
		}
	case AuthBasic:
		allowed = []string{"username", "password"}
		if ra.Username == "" {
			v.add(at+".username", "is required for basic")
		} else if strings.Contains(ra.Username, ":") || hasControl(ra.Username) {
			v.add(at+".username", "must not contain ':' or control characters")
		}
		a.Password = v.secret(at+".password", ra.Password, "basic")
	case "", AuthNone:
		a.Type = AuthNone
	default:
		v.add(at+".type", "must be oauth2, private_key_jwt, api_key or basic")
		return Auth{Type: AuthNone}
	}
	v.unused(at, a.Type, ra, allowed)
	return a
}

// privateKeyJWT checks the fields of private_key_jwt and returns its key.
func (v *validator) privateKeyJWT(at string, ra *rawAuth) Secret {
	v.url(at+".token_url", ra.TokenURL, "https", "http")
	if ra.ClientID == "" {
		v.add(at+".client_id", "is required for private_key_jwt")
	}
	if ra.KeyID == "" {
		v.add(at+".key_id", "is required for private_key_jwt")
	} else if len(ra.KeyID) > 256 || hasControl(ra.KeyID) {
		v.add(at+".key_id", "must be at most 256 characters, without control characters")
	}
	algOK := ra.Algorithm == ehrhttp.AlgRS384 || ra.Algorithm == ehrhttp.AlgES384
	switch {
	case ra.Algorithm == "":
		v.add(at+".algorithm", "is required for private_key_jwt (RS384 or ES384)")
	case !algOK:
		v.add(at+".algorithm", "must be RS384 or ES384")
	}
	key := v.secret(at+".private_key", ra.PrivateKey, "private_key_jwt")
	if !key.IsZero() && algOK {
		if _, err := ehrhttp.ParseSigningKey(key.Value(), ra.Algorithm); err != nil {
			v.add(at+".private_key", "%s", err)
		}
	}
	v.scopes(at, ra.Scopes)
	return key
}

// unused refuses the fields given that the type does not use.
func (v *validator) unused(at string, t AuthType, ra *rawAuth, allowed []string) {
	set := map[string]bool{
		"token_url": ra.TokenURL != "", "client_id": ra.ClientID != "", "client_secret": ra.ClientSecret != "",
		"scopes": len(ra.Scopes) > 0, "api_key": ra.APIKey != "", "api_key_header": ra.APIKeyHeader != "",
		"username": ra.Username != "", "password": ra.Password != "",
		"private_key": ra.PrivateKey != "", "key_id": ra.KeyID != "", "algorithm": ra.Algorithm != "",
	}
	for _, f := range []string{"token_url", "client_id", "client_secret", "scopes", "private_key", "key_id", "algorithm",
		"api_key", "api_key_header", "username", "password"} {
		if set[f] && !slices.Contains(allowed, f) {
			if t == AuthNone {
				v.add(at+"."+f, "is given but authentication.type is missing (oauth2, private_key_jwt, api_key or basic)")
			} else {
				v.add(at+"."+f, "is not used with type %s", t)
			}
		}
	}
}

func (v *validator) scopes(at string, scopes []string) {
	for j, sc := range scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\r\n\"\\") || hasControl(sc) {
			v.add(fmt.Sprintf("%s.scopes[%d]", at, j), "must be non-empty, without spaces, quotes or backslashes")
		}
	}
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func (v *validator) secret(at, written, authType string) Secret {
	if written == "" {
		v.add(at, "is required for %s", authType)
		return Secret{}
	}
	s, err := v.secrets.resolve(written)
	if err != nil {
		v.add(at, "%s", err)
	}
	return s
}

// url checks an absolute URL with a host and the scheme secure, or
// plaintext when the host is a loopback address (a test or a local demo):
// credentials and patient data never cross a network in clear. Its errors
// do not repeat the URL, which might hold credentials.
func (v *validator) url(at, s, secure, plaintext string) {
	want := plaintext + " or " + secure
	if s == "" {
		v.add(at, "is required (an %s URL)", want)
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != secure && u.Scheme != plaintext) || u.Host == "" || u.Opaque != "":
		v.add(at, "must be an absolute %s URL", want)
	case u.Scheme == plaintext && !isLoopback(u.Hostname()):
		v.add(at, "must be %s (%s only on a loopback host)", secure, plaintext)
	case u.User != nil:
		v.add(at, "must not contain credentials; use authentication")
	case u.Fragment != "" || strings.HasSuffix(s, "#"):
		v.add(at, "must not contain a fragment")
	}
}

func validName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

func validAction(s string) bool { return validName(s) }

func validPath(s string) bool {
	return strings.HasPrefix(s, "/") && len(s) <= 1024 && !strings.ContainsAny(s, " ?#\\") && !hasControl(s)
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// containsBefore reports whether list[j] appears earlier in list.
func containsBefore(list []string, j int) bool { return slices.Contains(list[:j], list[j]) }
