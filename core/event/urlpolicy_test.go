package event

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/core"
)

type resolverFunc func(host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return f(host)
}

func TestURLPolicy_RefusesRequestForgery(t *testing.T) {
	dns := resolverFunc(func(host string) ([]netip.Addr, error) {
		switch host {
		case "inside.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.1.1")}, nil
		case "outside.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return nil, errors.New("no such host")
	})
	for _, c := range []struct {
		url          string
		allowPrivate bool
		code         string // "": accepted
	}{
		{"https://outside.example/hooks", false, ""},
		{"https://unknown.example/hooks", false, ""}, // checked again when connecting
		{"https://93.184.216.34/x", false, ""},
		{"https://[2606:2800:220:1::1]/x", false, ""},
		{"http://outside.example/hooks", false, "webhook_url_not_allowed"},
		{"https://inside.example/hooks", false, "webhook_url_not_allowed"},
		{"https://localhost/x", false, "webhook_url_not_allowed"},
		{"https://LOCALHOST./x", false, "webhook_url_not_allowed"},
		{"https://a.localhost/x", false, "webhook_url_not_allowed"},
		{"https://127.0.0.1/x", false, "webhook_url_not_allowed"},
		{"https://127.1.2.3:8443/x", false, "webhook_url_not_allowed"},
		{"https://10.0.0.5/x", false, "webhook_url_not_allowed"},
		{"https://172.31.255.1/x", false, "webhook_url_not_allowed"},
		{"https://192.168.0.1/x", false, "webhook_url_not_allowed"},
		{"https://169.254.169.254/x", false, "webhook_url_not_allowed"},
		{"https://0.0.0.0/x", false, "webhook_url_not_allowed"},
		{"https://100.64.0.1/x", false, "webhook_url_not_allowed"},
		{"https://[::1]/x", false, "webhook_url_not_allowed"},
		{"https://[::]/x", false, "webhook_url_not_allowed"},
		{"https://[fc00::1]/x", false, "webhook_url_not_allowed"},
		{"https://[fdff::1]/x", false, "webhook_url_not_allowed"},
		{"https://[fe80::1]/x", false, "webhook_url_not_allowed"},
		{"https://[::ffff:10.0.0.1]/x", false, "webhook_url_not_allowed"},
		{"https://127.1/x", false, "webhook_url_not_allowed"},
		{"https://0x7f000001/x", false, "webhook_url_not_allowed"},
		{"https://2130706433/x", false, "webhook_url_not_allowed"},
		{"https://0x7f.0.0.1/x", false, "webhook_url_not_allowed"},
		{"https://cafe.example/x", false, ""},
		{"https://1password.example/x", false, ""},
		{"http://127.0.0.1:8080/x", true, ""},
		{"https://inside.example/hooks", true, ""},
		{"https://outside.example/" + strings.Repeat("a", MaxURLLength), false, "invalid_webhook"},
		{"outside.example/hooks", false, "invalid_webhook"},
		{"ftp://outside.example/", false, "invalid_webhook"},
		{"https://user:pw@outside.example/", false, "invalid_webhook"},
		{"https://outside.example:0/", false, "invalid_webhook"},
		{" https://outside.example/", false, "invalid_webhook"},
	} {
		err := URLPolicy{AllowPrivate: c.allowPrivate, Resolver: dns}.Check(context.Background(), c.url)
		var ce *core.Error
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%.60s (private %v): refused: %v", c.url, c.allowPrivate, err)
		case c.code != "" && (!errors.As(err, &ce) || ce.Code != c.code || ce.Kind != core.KindInvalid):
			t.Errorf("%.60s (private %v): %v, want %s", c.url, c.allowPrivate, err, c.code)
		}
	}
}

func TestForbidden_TheContractsRanges(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": false, "93.184.216.34": false, "2606:4700::1111": false, "172.32.0.1": false, "192.169.0.1": false,
		"127.0.0.1": true, "10.255.255.255": true, "172.16.0.1": true, "192.168.255.1": true, "169.254.1.1": true,
		"0.0.0.0": true, "::": true, "::1": true, "fc00::": true, "fe80::1": true, "ff02::1": true, "224.0.0.1": true,
		"::ffff:192.168.1.1": true,
	} {
		if got := Forbidden(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Forbidden(%s) = %v, want %v", addr, got, want)
		}
	}
}
