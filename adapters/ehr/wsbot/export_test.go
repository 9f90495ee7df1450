package wsbot

import (
	"context"
	"net"
)

// SetNetDial makes c reach its bot through dial instead of the network
// (and without a proxy): a test serves the handshake over an in-memory
// pipe, which works inside a synctest bubble where sockets do not.
func SetNetDial(c *Client, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	c.dialer.NetDialContext = dial
	c.dialer.Proxy = nil
}

// SetMaxRecords lowers the bound of SearchRecords (MaxRecords) for a test.
func SetMaxRecords(c *Client, n int) { c.maxRecords = n }
