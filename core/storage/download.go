package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/carebridge/carebridge/core/storage/segcrypt"
)

// ByteRange is one requested range of a file, as in an HTTP Range header:
// Start..End inclusive (End < 0: to the end), or the last Suffix bytes when
// Suffix > 0.
type ByteRange struct {
	Start, End int64
	Suffix     int64
}

// Download is an opened file: the plaintext bytes Start..Start+Length-1 of
// Blob. Body must be closed.
type Download struct {
	Blob    Blob
	Start   int64
	Length  int64
	Partial bool // a range was asked for and is being served
	Body    io.ReadCloser
}

// Download opens blob id for reading when the caller may read it, whole or
// the range r. An encrypted file is decrypted segment by segment; every
// byte is authenticated before it is handed out. A read that finds the
// stored bytes tampered with fails with ErrBlobCorrupt.
func (s *Service) Download(ctx context.Context, id int64, r *ByteRange) (*Download, error) {
	b, err := s.get(ctx, id, read)
	if err != nil {
		return nil, err
	}
	d := &Download{Blob: b, Length: b.Size}
	if r != nil {
		if d.Start, d.Length, err = resolveRange(*r, b.Size); err != nil {
			return nil, err
		}
		d.Partial = true
	}
	if b.Encrypted {
		d.Body, err = s.openEncrypted(ctx, b, d.Start, d.Length)
	} else {
		d.Body, err = s.objects.Get(ctx, b.Container, b.Name, d.Start, d.Length)
	}
	if err != nil {
		return nil, fmt.Errorf("open blob %d: %w", id, err)
	}
	if d.Length == 0 {
		return d, nil
	}
	// Read ahead so that a missing or (first segment) corrupt object is a
	// clean error before any header is sent.
	br := bufio.NewReaderSize(d.Body, 32<<10)
	if _, err := br.Peek(1); err != nil {
		d.Body.Close()
		return nil, fmt.Errorf("read blob %d: %w", id, corrupt(err))
	}
	d.Body = newBody(br, d.Body)
	return d, nil
}

// newBody is the body of a download that reads from br, which reads from
// src. When src writes itself out (the read-ahead of an encrypted file),
// so does the body: io.Copy then sends the decrypted buffers as they are,
// with no copy through the caller's buffer.
func newBody(br *bufio.Reader, src io.ReadCloser) io.ReadCloser {
	b := body{br, src}
	if _, ok := src.(io.WriterTo); ok {
		return bodyWriterTo{b}
	}
	return b
}

// body turns an authentication failure of the decrypter into
// ErrBlobCorrupt.
type body struct {
	br  *bufio.Reader
	src io.ReadCloser
}

func (b body) Read(p []byte) (int, error) {
	n, err := b.br.Read(p)
	return n, corrupt(err)
}

func (b body) Close() error { return b.src.Close() }

type bodyWriterTo struct{ body }

// WriteTo writes what br holds, then lets src write the rest.
func (b bodyWriterTo) WriteTo(w io.Writer) (int64, error) {
	n, err := b.br.WriteTo(w)
	return n, corrupt(err)
}

func resolveRange(r ByteRange, size int64) (start, length int64, err error) {
	switch {
	case r.Suffix > 0:
		if size == 0 {
			return 0, 0, ErrRangeNotSatisfiable
		}
		start = max(0, size-r.Suffix)
		return start, size - start, nil
	case r.Start < 0 || r.Start >= size || (r.End >= 0 && r.End < r.Start):
		return 0, 0, ErrRangeNotSatisfiable
	}
	end := size - 1
	if r.End >= 0 && r.End < end {
		end = r.End
	}
	return r.Start, end - r.Start + 1, nil
}

// openEncrypted fetches only the ciphertext segments that cover the
// plaintext range and decrypts them.
func (s *Service) openEncrypted(ctx context.Context, b Blob, start, length int64) (io.ReadCloser, error) {
	if length == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	dataKey, err := s.keys.Unwrap(b.KeyID, b.WrappedKey)
	if err != nil {
		return nil, err
	}
	rng, err := segcrypt.PlainRange(b.Size, start, start+length-1)
	if err != nil {
		return nil, fmt.Errorf("range: %w", err)
	}
	n := rng.Length
	if rng.Offset+n == segcrypt.CiphertextSize(b.Size) {
		n = -1 // read to the object's end, so appended bytes are detected too
	}
	body, err := s.objects.Get(ctx, b.Container, b.Name, rng.Offset, n)
	if err != nil {
		return nil, err
	}
	plain, err := segcrypt.DecryptRange(body, dataKey, rng)
	if err != nil {
		body.Close()
		return nil, corrupt(fmt.Errorf("decrypt: %w", err))
	}
	return newReadAhead(plain, body, s.readAhead, readAheadDepth), nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

func corrupt(err error) error {
	if err != nil && errors.Is(err, segcrypt.ErrCorrupt) {
		return ErrBlobCorrupt.Wrap(err)
	}
	return err
}
