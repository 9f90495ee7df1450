package storage

import (
	"errors"
	"io"
	"sync"
)

// readAhead reads (and so decrypts) ahead of its consumer in a goroutine of
// its own, so that opening segments on one core overlaps with sending the
// bytes on the other. It holds at most depth buffers of size bytes.
type readAhead struct {
	full   chan chunk
	free   chan []byte
	done   chan struct{}
	exited chan struct{}
	closer io.Closer
	once   sync.Once

	cur []byte // unread part of the current chunk
	buf []byte // the current chunk's buffer, returned to free when read
	err error  // sticky error after the last chunk
}

type chunk struct {
	buf []byte
	n   int
	err error
}

func newReadAhead(r io.Reader, closer io.Closer, depth, size int) *readAhead {
	ra := &readAhead{
		full:   make(chan chunk, depth),
		free:   make(chan []byte, depth),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		closer: closer,
	}
	for range depth {
		ra.free <- make([]byte, size)
	}
	go ra.fill(r)
	return ra
}

func (ra *readAhead) fill(r io.Reader) {
	defer close(ra.exited)
	for {
		var buf []byte
		select {
		case buf = <-ra.free:
		case <-ra.done:
			return
		}
		n, err := io.ReadFull(r, buf)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		select {
		case ra.full <- chunk{buf: buf, n: n, err: err}:
		case <-ra.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (ra *readAhead) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.buf != nil {
			ra.free <- ra.buf // never blocks: free has room for every buffer
			ra.buf = nil
		}
		if ra.err != nil {
			return 0, ra.err
		}
		c := <-ra.full
		ra.buf, ra.cur, ra.err = c.buf, c.buf[:c.n], c.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// Close stops the reader goroutine and closes the source.
func (ra *readAhead) Close() error {
	var err error
	ra.once.Do(func() {
		close(ra.done)
		err = ra.closer.Close() // unblocks a read in progress
		<-ra.exited
	})
	return err
}
