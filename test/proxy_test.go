package test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// dbLink is a TCP relay between the app and PostgreSQL that a test can
// cut, so the app sees its database stop without the machine's shared
// server being stopped.
type dbLink struct {
	t      *testing.T
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

// newDBLink relays to the host of dbURL and returns the link and the URL
// that goes through it.
func newDBLink(t *testing.T, dbURL string) (*dbLink, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &dbLink{t: t, ln: ln, target: u.Host}
	go l.serve()
	t.Cleanup(func() { ln.Close(); l.cutAll() })
	u.Host = ln.Addr().String()
	return l, u.String()
}

func (l *dbLink) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		if l.cut {
			l.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.conns = append(l.conns, c, up)
		l.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

// stop closes every relayed connection and refuses new ones: to the app,
// the database has stopped.
func (l *dbLink) stop() {
	l.mu.Lock()
	l.cut = true
	l.mu.Unlock()
	l.cutAll()
}

// start lets connections through again.
func (l *dbLink) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = false
}

func (l *dbLink) cutAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}
