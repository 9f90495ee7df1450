package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/carebridge/carebridge/core/event"
)

// Guard dials the receivers of a practice's subscriptions: it resolves the
// host itself at each connection and dials only the addresses
// event.Forbidden allows, as IP literals. So a name that resolved to a
// public address when the subscription was made and resolves inside later
// (DNS rebinding) is never connected to: the attempt fails with a
// refusedError, which the delivery log shows as its lastError. The
// dialer's Control hook checks the socket's address once more, a second
// layer should a later change dial anything but the checked literal.
type Guard struct {
	Resolver event.Resolver // nil: net.DefaultResolver
}

// refusedError is a connection the guard refused; its text is the
// delivery's lastError.
type refusedError struct{ addr netip.Addr }

func (e *refusedError) Error() string {
	return fmt.Sprintf("address not allowed: %s is a loopback, private, link-local or unspecified address (request forgery protection)", e.addr)
}

// control refuses, at connect time, an address the guard does not allow.
func control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unexpected address %q", address)
	}
	if event.Forbidden(ap.Addr()) {
		return &refusedError{addr: ap.Addr().Unmap()}
	}
	return nil
}

// DialContext connects to address ("host:port") as net.Dialer does, to the
// first allowed address of the host that answers.
func (g Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		r := g.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		if addrs, err = r.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, err
		}
	}
	d := net.Dialer{Control: control}
	var first error
	for _, a := range addrs {
		if event.Forbidden(a) {
			if first == nil {
				first = &refusedError{addr: a.Unmap()}
			}
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		if first == nil || errors.As(first, new(*refusedError)) {
			first = err
		}
	}
	if first == nil {
		first = &net.DNSError{Err: "no address", Name: host, IsNotFound: true}
	}
	return nil, first
}
