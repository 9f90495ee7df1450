package clamd

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// maxSocketPath is the longest unix socket path Linux accepts (sun_path
// holds 108 bytes, NUL included).
const maxSocketPath = 107

// ParseAddress reads CLAMD_ADDRESS: "tcp://host:port" or
// "unix:///path/to/clamd.sock", or without the scheme "host:port" and
// "/path/to/clamd.sock". It returns the network ("tcp" or "unix") and the
// address for Config. Anything else is an error: an empty host, a port
// outside 1–65535, a relative path, another scheme, a path, user or query
// after host:port, control characters.
func ParseAddress(s string) (network, address string, err error) {
	if s == "" {
		return "", "", errors.New("clamd address is empty")
	}
	if strings.ContainsFunc(s, isControl) {
		return "", "", fmt.Errorf("clamd address %q has control characters", s)
	}
	scheme, rest, hasScheme := strings.Cut(s, "://")
	switch {
	case strings.HasPrefix(s, "/"):
		network, address = "unix", s
	case !hasScheme:
		network, address = "tcp", s
	case strings.EqualFold(scheme, "unix"):
		if !strings.HasPrefix(rest, "/") {
			return "", "", fmt.Errorf("clamd address %q: want unix:///absolute/path", s)
		}
		network, address = "unix", rest
	case strings.EqualFold(scheme, "tcp"):
		network, address = "tcp", rest
	default:
		return "", "", fmt.Errorf("clamd address %q: scheme %q is not tcp or unix", s, scheme)
	}
	if network == "unix" {
		if err := checkSocketPath(address); err != nil {
			return "", "", fmt.Errorf("clamd address %q: %w", s, err)
		}
		return network, address, nil
	}
	if err := checkHostPort(address); err != nil {
		return "", "", fmt.Errorf("clamd address %q: %w", s, err)
	}
	return network, address, nil
}

func checkSocketPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return errors.New("the socket path is not absolute")
	case strings.HasSuffix(p, "/"):
		return errors.New("the socket path names a directory")
	case len(p) > maxSocketPath:
		return fmt.Errorf("the socket path is longer than %d bytes", maxSocketPath)
	}
	return nil
}

func checkHostPort(hp string) error {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return errors.New("want host:port")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("port %q is not 1 to 65535", port)
	}
	switch {
	case host == "":
		return errors.New("the host is empty")
	case strings.Contains(host, ":"):
		// An IPv6 literal, written in brackets.
		if _, err := netip.ParseAddr(host); err != nil || !strings.HasPrefix(hp, "[") {
			return fmt.Errorf("host %q is not an IPv6 address in brackets", host)
		}
	case strings.HasPrefix(hp, "["):
		return fmt.Errorf("host %q in brackets is not an IPv6 address", host)
	case !validHostname(host):
		return fmt.Errorf("host %q is not a host name or IPv4 address", host)
	}
	return nil
}

// validHostname accepts letters, digits, '-', '_' and '.', starting with a
// letter or digit (IPv4 addresses included).
func validHostname(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '_' && c != '.') {
			return false
		}
	}
	return h != ""
}
