package clamd

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct{ in, network, address string }{
		{"tcp://clamd:3310", "tcp", "clamd:3310"},
		{"TCP://127.0.0.1:3310", "tcp", "127.0.0.1:3310"},
		{"tcp://[::1]:3310", "tcp", "[::1]:3310"},
		{"tcp://clamav_daemon.internal:1", "tcp", "clamav_daemon.internal:1"},
		{"localhost:65535", "tcp", "localhost:65535"},
		{"unix:///run/clamav/clamd.ctl", "unix", "/run/clamav/clamd.ctl"},
		{"/var/run/clamd.scan/clamd.sock", "unix", "/var/run/clamd.scan/clamd.sock"},
	} {
		network, address, err := ParseAddress(tc.in)
		if err != nil || network != tc.network || address != tc.address {
			t.Errorf("ParseAddress(%q) = %q, %q, %v; want %q, %q", tc.in, network, address, err, tc.network, tc.address)
		}
	}
	for _, in := range []string{
		"", "clamd", "clamd:", ":3310", "tcp://:3310", "tcp://clamd", "tcp://clamd:0", "tcp://clamd:65536",
		"tcp://clamd:-1", "tcp://clamd:+3310", "tcp://clamd:3310/", "tcp://clamd:3310/x", "tcp://u@clamd:3310",
		"tcp://clamd:3310?x=1", "tcp://cla md:3310", "tcp://-clamd:3310", "tcp://[clamd]:3310", "tcp://::1:3310",
		"tcp://[::1%]:3310", "http://clamd:3310", "udp://clamd:3310", "clamd.sock", "./clamd.sock",
		"unix://clamd.sock", "unix://host/run/clamd.sock", "unix://", "unix:///", "/run/clamav/",
		"unix:///run/clamd\x00.sock", "/run/clamd\n.sock", "tcp://clamd:3310\r", "tcp://clamd\t:3310",
		"/" + strings.Repeat("a", maxSocketPath),
	} {
		if network, address, err := ParseAddress(in); err == nil {
			t.Errorf("ParseAddress(%q) = %q, %q; want an error", in, network, address)
		}
	}
}

// FuzzParseAddress: any text parses without panicking, and what it accepts
// is a network and an address New takes, written again the same way.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"tcp://clamd:3310", "unix:///run/clamav/clamd.ctl", "127.0.0.1:3310", "/tmp/c.sock",
		"tcp://[::1]:3310", "tcp://[fe80::1%eth0]:3310", "unix://x", "http://a:1", "a:99999", "unix:///a://b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		network, address, err := ParseAddress(in)
		if err != nil {
			if network != "" || address != "" {
				t.Fatalf("refused %q but returned %q, %q", in, network, address)
			}
			return
		}
		if strings.ContainsFunc(address, isControl) {
			t.Fatalf("%q: address %q has control characters", in, address)
		}
		switch network {
		case "unix":
			if !strings.HasPrefix(address, "/") || len(address) > maxSocketPath {
				t.Fatalf("%q: socket path %q", in, address)
			}
		case "tcp":
			host, port, err := net.SplitHostPort(address)
			n, perr := strconv.Atoi(port)
			if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
				t.Fatalf("%q: tcp address %q", in, address)
			}
		default:
			t.Fatalf("%q: network %q", in, network)
		}
		if n2, a2, err := ParseAddress(network + "://" + address); err != nil || n2 != network || a2 != address {
			t.Fatalf("%q → %s://%s → %q, %q, %v", in, network, address, n2, a2, err)
		}
		if _, err := New(Config{Network: network, Address: address}); err != nil {
			t.Fatalf("%q: New refused it: %v", in, err)
		}
	})
}
