package ehrhttp

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// validate checks cfg and returns its parsed base URL.
func (cfg Config) validate() (*url.URL, error) {
	var errs []error
	name := cfg.Name
	if strings.TrimSpace(name) == "" {
		name = "(unnamed)"
		errs = append(errs, errors.New("ehr system: name is required"))
	}
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("ehr system %q: %s %s", name, field, fmt.Sprintf(format, args...)))
	}
	base, err := url.Parse(cfg.BaseURL)
	switch {
	case cfg.BaseURL == "":
		bad("base_url", "is required")
	case err != nil:
		bad("base_url", "is not a valid URL")
	case !slices.Contains([]string{"http", "https", "ws", "wss"}, strings.ToLower(base.Scheme)):
		bad("base_url", "must be an absolute http, https, ws or wss URL")
	case base.Host == "" || base.Hostname() == "":
		bad("base_url", "has no host")
	case base.User != nil:
		bad("base_url", "must not carry credentials (use authentication)")
	case base.RawQuery != "" || base.Fragment != "" || base.ForceQuery:
		bad("base_url", "must not have a query or a fragment")
	}
	cfg.Auth.validate(bad)
	if cfg.RequestsPerMinute < 0 {
		bad("rate_limit.requests_per_minute", "must not be negative")
	}
	if cfg.Timeout < 0 {
		bad("timeout", "must not be negative")
	}
	if cfg.RetryAttempts < 0 || cfg.RetryAttempts > MaxRetryAttempts {
		bad("retry_attempts", "must be from 0 to %d", MaxRetryAttempts)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	base.Scheme = strings.ToLower(base.Scheme)
	return base, nil
}
