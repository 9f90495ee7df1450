package s3

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/carebridge/carebridge/core/storage"
)

// Part sizes: S3 takes parts of 5 MiB to 5 GiB, at most 10,000 of them.
const (
	DefaultPartSize = 64 << 20
	MinPartSize     = 5 << 20
	MaxPartSize     = 5 << 30
	maxParts        = 10000
)

// DefaultRegion is the region used when the connection string names none.
const DefaultRegion = "us-east-1"

// Config says how to reach an S3-compatible store.
type Config struct {
	// Endpoint is host[:port] of the server; addressing is path-style.
	Endpoint string
	// Region signs the requests; DefaultRegion when empty.
	Region string
	// AccessKey and SecretKey are static credentials; when both are empty
	// the default AWS credential chain is used.
	AccessKey string
	SecretKey string
	// Secure selects https.
	Secure bool
	// BucketPrefix is put before each container's name to form its bucket.
	BucketPrefix string
	// PartSize is the size of the parts of a multipart upload;
	// DefaultPartSize when 0.
	PartSize int64
	// MaxSinglePut is the largest object stored with one streaming
	// PutObject; larger ones go up as multipart uploads. MaxPartSize (5 GiB,
	// the S3 limit) when 0. One PutObject is markedly faster: the server
	// has no parts to join.
	MaxSinglePut int64
}

// ParseConnectionString parses
//
//	s3://ACCESS_KEY:SECRET_KEY@host:port?region=us-east-1&secure=false&bucket_prefix=cb-
//
// The user info is optional (without it the default AWS credential chain is
// used) and percent-decoded; secure defaults to true and region to
// us-east-1. Unknown or repeated query parameters are errors. Errors never
// contain the secret key.
func ParseConnectionString(s string) (Config, error) {
	cfg, err := parseConnectionString(s)
	if err != nil {
		return Config{}, fmt.Errorf("parse s3 connection string: %w", err)
	}
	return cfg, nil
}

func parseConnectionString(s string) (Config, error) {
	u, err := url.Parse(s)
	if err != nil {
		// A *url.Error repeats the whole string, secret included.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return Config{}, fmt.Errorf("invalid URL: %w", err)
	}
	switch {
	case u.Scheme != "s3":
		return Config{}, fmt.Errorf("scheme %q, want s3", u.Scheme)
	case u.Opaque != "":
		return Config{}, errors.New("want s3://host[:port]")
	case u.Host == "":
		return Config{}, errors.New("missing host")
	case u.Path != "" && u.Path != "/":
		return Config{}, fmt.Errorf("unexpected path %q: buckets come from bucket_prefix", u.Path)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return Config{}, errors.New("unexpected fragment")
	}

	cfg := Config{Endpoint: u.Host, Region: DefaultRegion, Secure: true}
	if u.User != nil {
		secret, ok := u.User.Password()
		cfg.AccessKey, cfg.SecretKey = u.User.Username(), secret
		switch {
		case cfg.AccessKey == "":
			return Config{}, errors.New("user info without an access key")
		case !ok || secret == "":
			return Config{}, errors.New("user info without a secret key: want ACCESS_KEY:SECRET_KEY@")
		}
	}

	if err := cfg.setQuery(u.RawQuery); err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// setQuery applies the connection string's query: region, secure and
// bucket_prefix, each at most once.
func (cfg *Config) setQuery(raw string) error {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return fmt.Errorf("invalid query: %w", err)
	}
	for key, vals := range q {
		if len(vals) != 1 {
			return fmt.Errorf("query parameter %q given %d times", key, len(vals))
		}
		v := vals[0]
		switch key {
		case "region":
			if v == "" {
				return errors.New("region is empty")
			}
			cfg.Region = v
		case "secure":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("secure=%q is not a boolean", v)
			}
			cfg.Secure = b
		case "bucket_prefix":
			cfg.BucketPrefix = v
		default:
			return fmt.Errorf("unknown query parameter %q (want region, secure or bucket_prefix)", key)
		}
	}
	return nil
}

// ConnectionString formats c as ParseConnectionString reads it. It contains
// the secret key: do not log it (String redacts).
func (c Config) ConnectionString() string {
	return c.url(false)
}

// String is the connection string with the secret key redacted.
func (c Config) String() string {
	return c.url(true)
}

func (c Config) url(redact bool) string {
	u := url.URL{Scheme: "s3", Host: c.Endpoint}
	if c.AccessKey != "" || c.SecretKey != "" {
		secret := c.SecretKey
		if redact {
			secret = "REDACTED"
		}
		u.User = url.UserPassword(c.AccessKey, secret)
	}
	q := url.Values{}
	region := c.Region
	if region == "" {
		region = DefaultRegion
	}
	q.Set("region", region)
	q.Set("secure", strconv.FormatBool(c.Secure))
	if c.BucketPrefix != "" {
		q.Set("bucket_prefix", c.BucketPrefix)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if err := validateEndpoint(c.Endpoint); err != nil {
		errs = append(errs, err)
	}
	if c.Region != "" && !validRegion(c.Region) {
		errs = append(errs, fmt.Errorf("region %q: want letters, digits and '-'", c.Region))
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		errs = append(errs, errors.New("access key and secret key go together: give both or neither"))
	}
	if strings.ContainsFunc(c.AccessKey, isControl) {
		errs = append(errs, errors.New("access key has control characters"))
	}
	if strings.ContainsFunc(c.SecretKey, isControl) {
		errs = append(errs, errors.New("secret key has control characters"))
	}
	for _, ct := range storage.Containers {
		if b := c.bucket(ct); !validBucket(b) {
			errs = append(errs, fmt.Errorf("bucket_prefix %q: bucket %q is not a valid S3 bucket name", c.BucketPrefix, b))
			break
		}
	}
	if c.PartSize != 0 && (c.PartSize < MinPartSize || c.PartSize > MaxPartSize) {
		errs = append(errs, fmt.Errorf("part size %d not in %d..%d", c.PartSize, MinPartSize, MaxPartSize))
	}
	if c.MaxSinglePut < 0 || c.MaxSinglePut > MaxPartSize {
		errs = append(errs, fmt.Errorf("single put limit %d not in 0..%d", c.MaxSinglePut, MaxPartSize))
	}
	return errors.Join(errs...)
}

// bucket is the bucket that holds container ct.
func (c Config) bucket(ct storage.Container) string {
	return c.BucketPrefix + string(ct)
}

// validateEndpoint accepts host[:port], where host is a DNS name, an IPv4
// address or a bracketed IPv6 address, and port is 1..65535.
func validateEndpoint(e string) error {
	if e == "" {
		return errors.New("missing host")
	}
	host, port := e, ""
	if strings.HasPrefix(e, "[") {
		end := strings.IndexByte(e, ']')
		if end < 0 {
			return fmt.Errorf("endpoint %q: unclosed '['", e)
		}
		host, port = e[1:end], e[end+1:]
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil && !strings.Contains(host, ":") {
			return fmt.Errorf("endpoint %q: invalid IPv6 address", e)
		}
		if port != "" {
			if !strings.HasPrefix(port, ":") {
				return fmt.Errorf("endpoint %q: want [ipv6]:port", e)
			}
			port = port[1:]
			if port == "" {
				return fmt.Errorf("endpoint %q: empty port", e)
			}
		}
	} else {
		if i := strings.LastIndexByte(e, ':'); i >= 0 {
			host, port = e[:i], e[i+1:]
			if port == "" {
				return fmt.Errorf("endpoint %q: empty port", e)
			}
		}
		if host == "" {
			return errors.New("missing host")
		}
		for i := 0; i < len(host); i++ {
			c := host[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
				return fmt.Errorf("endpoint %q: invalid host", e)
			}
		}
	}
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 || port[0] == '+' {
			return fmt.Errorf("endpoint %q: invalid port %q", e, port)
		}
	}
	return nil
}

func validRegion(r string) bool {
	for _, b := range []byte(r) {
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-') {
			return false
		}
	}
	return len(r) <= 64
}

// validBucket follows the S3 bucket naming rules: 3 to 63 lower-case
// letters, digits, '.' and '-', starting and ending with a letter or digit,
// without "..", ".-" or "-.", and not shaped like an IP address.
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	if !alnum(b[0]) || !alnum(b[len(b)-1]) {
		return false
	}
	if strings.Contains(b, "..") || strings.Contains(b, ".-") || strings.Contains(b, "-.") {
		return false
	}
	return net.ParseIP(b) == nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
