package event

import (
	"context"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxURLLength is the longest receiver URL a practice may give.
const MaxURLLength = 2048

// Resolver looks up the addresses of a host name (a driven port;
// *net.Resolver implements it, tests inject their own).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// lookupTimeout bounds the look-up of a receiver's name at creation.
const lookupTimeout = 5 * time.Second

// URLPolicy is the rule for the receiver URLs of the subscriptions a
// practice makes, against server-side request forgery: an absolute https
// URL of at most MaxURLLength characters, without user info, whose host is
// not localhost and neither is nor resolves to a forbidden address
// (Forbidden). AllowPrivate (WEBHOOK_ALLOW_PRIVATE) lifts the address
// rules and allows http. A name that cannot be resolved now is accepted:
// the address is checked again on every connection.
type URLPolicy struct {
	AllowPrivate bool
	Resolver     Resolver // nil: names are not resolved at creation
}

// Check returns raw's problem as ErrInvalidWebhook (malformed) or
// ErrURLNotAllowed (forgery risk), or nil.
func (p URLPolicy) Check(ctx context.Context, raw string) error {
	if len(raw) > MaxURLLength {
		return ErrInvalidWebhook.WithMessage("Validation failed: url is longer than %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || strings.TrimSpace(raw) != raw || u.Opaque != "" || u.Hostname() == "" ||
		(u.Scheme != "https" && u.Scheme != "http") {
		return ErrInvalidWebhook.WithMessage("Validation failed: url must be an absolute https URL, as in https://example.com/hooks")
	}
	if u.User != nil {
		return ErrInvalidWebhook.WithMessage("Validation failed: url must not contain a user name or password")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return ErrInvalidWebhook.WithMessage("Validation failed: url port must be between 1 and 65535")
		}
	}
	if p.AllowPrivate {
		return nil
	}
	if u.Scheme != "https" {
		return ErrURLNotAllowed.WithMessage("Webhook URL not allowed: it must use https")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return ErrURLNotAllowed.WithMessage("Webhook URL not allowed: localhost")
	}
	a, err := netip.ParseAddr(host)
	if err != nil && numeric(host) {
		// 127.1, 0x7f000001, 2130706433: IPv4 in forms some resolvers
		// read as addresses; no host name looks like that.
		return ErrURLNotAllowed.WithMessage("Webhook URL not allowed: write an IP address in dotted decimal form")
	}
	if err == nil {
		if Forbidden(a) {
			return ErrURLNotAllowed.WithMessage("Webhook URL not allowed: %s is a loopback, private, link-local or unspecified address", a)
		}
		return nil
	}
	if p.Resolver == nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := p.Resolver.LookupNetIP(lctx, "ip", host)
	if err != nil {
		return nil // checked again when connecting
	}
	for _, a := range addrs {
		if Forbidden(a) {
			return ErrURLNotAllowed.WithMessage("Webhook URL not allowed: its host resolves to a loopback, private, link-local or unspecified address")
		}
	}
	return nil
}

// numeric reports whether host is made only of digits, dots and hex
// digits after "0x": an IPv4 address in a form other than dotted decimal.
func numeric(host string) bool {
	for _, label := range strings.Split(host, ".") {
		digits := strings.TrimPrefix(label, "0x")
		if digits == "" {
			return false
		}
		for _, c := range digits {
			isHex := c >= 'a' && c <= 'f'
			if !(c >= '0' && c <= '9') && !(isHex && digits != label) {
				return false
			}
		}
	}
	return true
}

// special are ranges beyond those netip classifies that no receiver of a
// practice may be in: "this network", carrier-grade NAT (shared address
// space, often the provider's own), the IPv4 broadcast address, and NAT64
// and 6to4 forms that can embed any IPv4 address.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("2002::/16"),
}

// Forbidden reports whether a practice's receiver may not be at address
// a: loopback (127/8, ::1), private (10/8, 172.16/12, 192.168/16,
// fc00::/7), link-local (169.254/16, fe80::/10), unspecified, multicast,
// and the special ranges above. An IPv4-mapped IPv6 address counts as its
// IPv4 address.
func Forbidden(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range special {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
