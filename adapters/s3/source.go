package s3

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/carebridge/carebridge/core/storage"
)

// What an upload reads: the caller's bytes, counted and checked.

// errDetached is what a request still reading the source sees after Put
// has returned.
var errDetached = errors.New("upload finished")

// source hands a request body exactly size bytes of r. It holds back the
// last bytes until r is found exhausted, so a long source never reaches the
// server complete; it records the first failure; and once detached it never
// touches r again. A mutex guards it because net/http may still read a
// request body after the request has returned.
type source struct {
	mu       sync.Mutex
	r        io.Reader
	size     int64
	n        int64 // bytes handed out
	err      error // first failure, sticky
	verified bool  // r ended right after size bytes
	detached bool
}

func (s *source) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.detached:
		return 0, errDetached
	case s.err != nil:
		return 0, s.err
	case s.n == s.size:
		if err := s.verify(); err != nil {
			return 0, err
		}
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	}
	if rest := s.size - s.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := s.r.Read(p)
	switch {
	case err == io.EOF && s.n+int64(n) < s.size:
		s.n += int64(n)
		s.err = fmt.Errorf("%w: source ended after %d of %d bytes", storage.ErrSizeMismatch, s.n, s.size)
		return n, s.err
	case err == io.EOF:
		s.verified = true
	case err != nil:
		s.n += int64(n)
		s.err = fmt.Errorf("read source: %w", err)
		return n, s.err
	}
	if s.n+int64(n) == s.size {
		// Hold the last bytes back until r is known to end here.
		if err := s.verify(); err != nil {
			return 0, err
		}
	}
	s.n += int64(n)
	return n, nil
}

// verify reads one byte past the end to make sure r ends there.
func (s *source) verify() error {
	if s.verified || s.err != nil {
		return s.err
	}
	var probe [1]byte
	for range 100 {
		n, err := s.r.Read(probe[:])
		switch {
		case n > 0:
			s.err = fmt.Errorf("%w: source has more than %d bytes", storage.ErrSizeMismatch, s.size)
			return s.err
		case err == io.EOF:
			s.verified = true
			return nil
		case err != nil:
			s.err = fmt.Errorf("read source: %w", err)
			return s.err
		}
	}
	s.err = fmt.Errorf("read source: %w", io.ErrNoProgress)
	return s.err
}

// consumed returns the bytes handed out so far.
func (s *source) consumed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// finish detaches r and returns the first failure of the source. When
// check is set (the upload itself succeeded) it also makes sure that all
// size bytes were sent and r ended there, which a request that never read
// its body (an empty one) did not.
func (s *source) finish(check bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if check && s.err == nil && !s.detached {
		if s.n != s.size {
			s.err = fmt.Errorf("%w: sent %d of %d bytes", storage.ErrSizeMismatch, s.n, s.size)
		} else {
			s.verify()
		}
	}
	s.detached = true
	return s.err
}

// part is one part's body; its own type so that nothing in the SDK can
// mistake it for a seekable or sized reader.
type part struct{ r io.Reader }

func (p *part) Read(b []byte) (int, error) { return p.r.Read(b) }
