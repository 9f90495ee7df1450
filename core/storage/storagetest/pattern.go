package storagetest

import (
	"encoding/binary"
	"io"
	"testing"
)

// patternRange returns the bytes Get(offset, length) should yield from an
// object holding Pattern(seed, size).
func patternRange(t *testing.T, seed uint64, size, offset, length int64) []byte {
	t.Helper()
	r := Pattern(seed, size)
	if _, err := io.CopyN(io.Discard, r, offset); err != nil {
		t.Fatal(err)
	}
	if length >= 0 {
		r = io.LimitReader(r, length)
	}
	return mustReadAll(t, r)
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Pattern returns a non-seekable reader of size deterministic pseudo-random
// bytes derived from seed; a negative size never ends. It holds no buffer, so
// it can stand in for uploads of any size.
func Pattern(seed uint64, size int64) io.Reader {
	g := &generator{state: seed*0x9e3779b97f4a7c15 + 1}
	if size < 0 {
		return g
	}
	return io.LimitReader(g, size)
}

// generator is a splitmix64 byte stream.
type generator struct {
	state uint64
	buf   [8]byte
	avail int
}

func (g *generator) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if g.avail == 0 {
			g.state += 0x9e3779b97f4a7c15
			z := g.state
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			binary.LittleEndian.PutUint64(g.buf[:], z^(z>>31))
			g.avail = len(g.buf)
		}
		c := copy(p[n:], g.buf[len(g.buf)-g.avail:])
		g.avail -= c
		n += c
	}
	return n, nil
}
