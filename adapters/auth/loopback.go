package auth

import (
	"net"
	"net/netip"
	"strings"
)

// IsLoopback reports whether the listen address addr ("host:port") binds
// only the loopback interface: a loopback IP such as 127.0.0.1 or [::1], or
// the name localhost. An empty host (":8080"), an unspecified address
// (0.0.0.0, [::]), any other name or IP, and a malformed address are not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
