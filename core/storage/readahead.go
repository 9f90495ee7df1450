package storage

import (
	"errors"
	"io"
	"sync"
)

// Decryption runs this far ahead of the client: at most four buffers of
// 256 KiB, lent by the service's ReadAheadPool.
const (
	readAheadDepth = 4
	readAheadSize  = 256 << 10
)

// DefaultReadAheadBytes bounds the read-ahead buffers of all downloads
// together unless configured otherwise: 64 buffers, 16 downloads at full
// depth.
const DefaultReadAheadBytes = 64 << 20

// ReadAheadPool lends the read-ahead buffers of encrypted downloads (256
// KiB each), at most a fixed number in all. It never allocates
// past its bound nor waits: a download that finds fewer buffers left than
// it wants reads ahead less, or not at all, and then goes at the pace of
// the client through the fixed buffers every download has. Buffers
// returned are kept for the next download (the garbage collector may drop
// idle ones).
type ReadAheadPool struct {
	max  int // buffers
	idle sync.Pool

	mu    sync.Mutex
	stats ReadAheadStats
}

// ReadAheadStats is what a ReadAheadPool has lent.
type ReadAheadStats struct {
	Max      int   // buffers the pool may lend at once
	Lent     int   // buffers lent now
	Peak     int   // most buffers lent at once
	Short    int64 // downloads that got fewer buffers than they wanted
	Starved  int64 // downloads that got none (no read-ahead)
	Returned int64 // buffers returned, in all
}

// NewReadAheadPool returns a pool of at most limit bytes of buffers
// (rounded down to whole buffers); limit 0 turns read-ahead off.
func NewReadAheadPool(limit int64) *ReadAheadPool { return newReadAheadPool(limit, readAheadSize) }

func newReadAheadPool(limit int64, size int) *ReadAheadPool {
	p := &ReadAheadPool{max: int(max(0, limit) / int64(size))}
	p.idle.New = func() any { b := make([]byte, size); return &b }
	p.stats.Max = p.max
	return p
}

// Stats returns what the pool has lent so far.
func (p *ReadAheadPool) Stats() ReadAheadStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// get lends up to n buffers, none when the pool is exhausted.
func (p *ReadAheadPool) get(n int) []*[]byte {
	p.mu.Lock()
	k := min(n, p.max-p.stats.Lent)
	p.stats.Lent += k
	p.stats.Peak = max(p.stats.Peak, p.stats.Lent)
	if k < n {
		p.stats.Short++
	}
	if k == 0 {
		p.stats.Starved++
	}
	p.mu.Unlock()
	bufs := make([]*[]byte, k)
	for i := range bufs {
		bufs[i] = p.idle.Get().(*[]byte)
	}
	return bufs
}

// put takes a lent buffer back.
func (p *ReadAheadPool) put(b *[]byte) {
	p.idle.Put(b)
	p.mu.Lock()
	p.stats.Lent--
	p.stats.Returned++
	p.mu.Unlock()
}

// readAhead reads (and so decrypts) ahead of its consumer in a goroutine of
// its own, so that opening segments on one core overlaps with sending the
// bytes on the other. It holds the buffers it was lent, and gives every one
// back to the pool on Close, however the download ended.
type readAhead struct {
	pool   *ReadAheadPool
	lent   int
	full   chan chunk
	free   chan *[]byte
	done   chan struct{}
	exited chan struct{}
	closer io.Closer
	once   sync.Once

	cur []byte  // unread part of the current chunk
	buf *[]byte // the current chunk's buffer, returned to free when read
	err error   // sticky error after the last chunk
}

type chunk struct {
	buf *[]byte
	n   int
	err error
}

// newReadAhead reads r ahead through up to depth buffers of pool; closer
// closes r's source. When the pool lends none, r is read as it is.
func newReadAhead(r io.Reader, closer io.Closer, pool *ReadAheadPool, depth int) io.ReadCloser {
	bufs := pool.get(depth)
	if len(bufs) == 0 {
		return readCloser{r, closer}
	}
	ra := &readAhead{
		pool:   pool,
		lent:   len(bufs),
		full:   make(chan chunk, len(bufs)),
		free:   make(chan *[]byte, len(bufs)),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		closer: closer,
	}
	for _, b := range bufs {
		ra.free <- b
	}
	go ra.fill(r)
	return ra
}

func (ra *readAhead) fill(r io.Reader) {
	defer close(ra.exited)
	for {
		var buf *[]byte
		select {
		case buf = <-ra.free:
		case <-ra.done:
			return
		}
		n, err := io.ReadFull(r, *buf)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		select {
		case ra.full <- chunk{buf: buf, n: n, err: err}:
		case <-ra.done:
			ra.free <- buf // never blocks: free has room for every buffer
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
		ra.buf, ra.cur, ra.err = c.buf, (*c.buf)[:c.n], c.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// WriteTo writes the chunks to w straight from the buffers they were read
// (and decrypted) into, without a copy.
func (ra *readAhead) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(ra.cur) > 0 {
			n, err := w.Write(ra.cur)
			total += int64(n)
			ra.cur = ra.cur[n:]
			if err == nil && len(ra.cur) > 0 {
				err = io.ErrShortWrite
			}
			if err != nil {
				return total, err
			}
		}
		if ra.buf != nil {
			ra.free <- ra.buf // never blocks: free has room for every buffer
			ra.buf = nil
		}
		if ra.err != nil {
			if ra.err == io.EOF {
				return total, nil
			}
			return total, ra.err
		}
		c := <-ra.full
		ra.buf, ra.cur, ra.err = c.buf, (*c.buf)[:c.n], c.err
	}
}

// Close stops the reader goroutine, closes the source and gives the
// buffers back to the pool. It is called once reads have returned.
func (ra *readAhead) Close() error {
	var err error
	ra.once.Do(func() {
		close(ra.done)
		err = ra.closer.Close() // unblocks a read in progress
		<-ra.exited
		// Every buffer now sits in free, in full, or in ra.buf.
		back := 0
		if ra.buf != nil {
			ra.pool.put(ra.buf)
			back++
		}
		ra.buf, ra.cur, ra.err = nil, nil, io.ErrClosedPipe
		for back < ra.lent {
			select {
			case b := <-ra.free:
				ra.pool.put(b)
			case c := <-ra.full:
				ra.pool.put(c.buf)
			}
			back++
		}
	})
	return err
}
