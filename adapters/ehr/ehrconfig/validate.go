package ehrconfig

import (
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

type validator struct {
	errs     []error
	secrets  *secretResolver
	adapters []AdapterRules
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
	s.SyncInterval = v.syncInterval(at, rs.Sync)
	s.PropagateTrace = rs.PropagateTrace
	if k, ok := v.adapter(s.Adapter); ok && rs.PropagateTrace && !k.PropagateTrace {
		v.add(at+": propagate_trace", "%s", v.noTrace(k))
	}
	if rs.Businesses != nil {
		s.Businesses = v.businesses(at, *rs.Businesses)
	}
	s.Auth = v.auth(at+": authentication", rs.Authentication)
	return s
}

// endpoint checks the adapter, its base URL and its search endpoint by
// the rules of its kind, defaulting the endpoint.
func (v *validator) endpoint(at string, s *System) {
	k, ok := v.adapter(s.Adapter)
	switch {
	case ok:
		v.url(at+": base_url", s.BaseURL, k.Scheme, k.LoopbackScheme)
		if s.SearchEndpoint == "" {
			s.SearchEndpoint = k.DefaultSearchEndpoint
		} else if !k.SearchEndpoint.Valid(s.SearchEndpoint) {
			v.add(at+": search_endpoint", "must be %s", k.SearchEndpoint.Rule)
		}
	case s.Adapter == "":
		v.add(at+": adapter", "is required (%s)", v.known())
	default:
		v.add(at+": adapter", "must be %s", v.known())
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

// syncInterval checks sync.interval: a Go duration, 0s (off) or from
// MinSyncInterval to MaxSyncInterval. Absent, it is 0 here: Parse gives
// the integration EHRs their default once it knows them.
func (v *validator) syncInterval(at string, rs *rawSync) time.Duration {
	if rs == nil || rs.Interval == nil {
		return 0
	}
	at += ": sync.interval"
	written := strings.TrimSpace(*rs.Interval)
	d, err := time.ParseDuration(written)
	switch {
	case written == "":
		v.add(at, "is empty; write a duration such as 60s or 2m (0s turns sync off)")
	case err != nil:
		v.add(at, "%q is not a duration; write one such as 60s or 2m (0s turns sync off)", safeName(written))
	case d < 0:
		v.add(at, "must not be negative (0s turns sync off)")
	case d > 0 && d < MinSyncInterval:
		v.add(at, "must be at least %s (or 0s to turn sync off)", MinSyncInterval)
	case d > MaxSyncInterval:
		v.add(at, "must be at most %s", MaxSyncInterval)
	default:
		return d
	}
	return 0
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
	algOK := ra.Algorithm == AlgRS384 || ra.Algorithm == AlgES384
	switch {
	case ra.Algorithm == "":
		v.add(at+".algorithm", "is required for private_key_jwt (RS384 or ES384)")
	case !algOK:
		v.add(at+".algorithm", "must be RS384 or ES384")
	}
	key := v.secret(at+".private_key", ra.PrivateKey, "private_key_jwt")
	if !key.IsZero() && algOK {
		if _, err := ParseSigningKey(key.Value(), ra.Algorithm); err != nil {
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

// validPath is PathEndpoint's check (at most 1024 bytes, and no
// backslash or control character either).
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
