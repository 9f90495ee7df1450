package clamd

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/clamdtest"
)

// realClient is a client of the real clamd d at address (its tcp:// or
// unix:// form).
func realClient(t *testing.T, address string) *Client {
	t.Helper()
	network, addr, err := ParseAddress(address)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Network: network, Address: addr, ChunkSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// scanOf streams b to c in writes of 1000 bytes and returns the verdict.
func scanOf(t *testing.T, c *Client, b []byte) (string, error) {
	t.Helper()
	s, err := c.Scan(context.Background())
	if err != nil {
		return "", err
	}
	defer s.Close()
	for len(b) > 0 {
		n := min(len(b), 1000)
		if _, err := s.Write(b[:n]); err != nil {
			return "", err
		}
		b = b[n:]
	}
	return s.Verdict()
}

func TestIntegrationClamd_VerdictsOverTCPAndUnix(t *testing.T) {
	d := clamdtest.Start(t)
	clean := bytes.Repeat([]byte("a clean referral letter\n"), 10_000)
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"EICAR", clamdtest.EICAR(), clamdtest.SigEICAR},
		{"EICAR inside a larger file", append(append(bytes.Clone(clean), clamdtest.EICAR()...), clean...), clamdtest.SigEICAR},
		{"the generated file (hash signature)", clamdtest.Generated(), clamdtest.SigGenerated},
		{"clean", clean, ""},
		{"empty", nil, ""},
	}
	for _, address := range []string{d.Address(), d.UnixAddress()} {
		c := realClient(t, address)
		for _, tt := range tests {
			if got, err := scanOf(t, c, tt.file); err != nil || got != tt.want {
				t.Errorf("%s over %s: %q, %v; want %q", tt.name, address, got, err, tt.want)
			}
		}
		if err := c.Ping(context.Background()); err != nil {
			t.Errorf("ping over %s: %v", address, err)
		}
		if v, err := c.Version(context.Background()); err != nil || !strings.HasPrefix(v, "ClamAV 1.") {
			t.Errorf("version over %s: %q, %v", address, v, err)
		}
	}
}

func TestIntegrationClamd_StreamLongerThanStreamMaxLength(t *testing.T) {
	d := clamdtest.StartWith(t, clamdtest.Options{StreamMaxLength: 1 << 20})
	c := realClient(t, d.Address())
	_, err := scanOf(t, c, bytes.Repeat([]byte("x"), 2<<20))
	if !errors.Is(err, storage.ErrScannerUnavailable) || !errors.Is(err, ErrStreamTooLong) {
		t.Fatalf("2 MiB past a 1 MiB StreamMaxLength: %v; want scanner_unavailable (stream too long)", err)
	}
	if got, err := scanOf(t, c, clamdtest.EICAR()); err != nil || got != clamdtest.SigEICAR {
		t.Fatalf("the next scan: %q, %v", got, err)
	}
}

func TestIntegrationClamd_StoppedThenRestarted(t *testing.T) {
	d := clamdtest.Start(t)
	c := realClient(t, d.UnixAddress())
	d.Stop()
	if _, err := scanOf(t, c, clamdtest.EICAR()); !errors.Is(err, storage.ErrScannerUnavailable) {
		t.Fatalf("scan with clamd stopped: %v", err)
	}
	if err := c.Ping(context.Background()); !errors.Is(err, storage.ErrScannerUnavailable) {
		t.Fatalf("ping with clamd stopped: %v", err)
	}
	d.Restart()
	if got, err := scanOf(t, c, clamdtest.EICAR()); err != nil || got != clamdtest.SigEICAR {
		t.Fatalf("scan after the restart: %q, %v", got, err)
	}
}
