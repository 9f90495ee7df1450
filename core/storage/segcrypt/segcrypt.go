// Package segcrypt encrypts a stream with AES-256-GCM in segments of 64 KiB
// of plaintext (the STREAM construction of Hoang, Reyhanitabar, Rogaway and
// Vizár), so that a file can be encrypted and decrypted in constant memory
// and any plaintext byte range can be decrypted by fetching only the
// segments that cover it.
//
// # Format
//
// The plaintext is cut into segments of SegmentSize bytes; the last segment
// holds the remainder (1 to SegmentSize bytes), and an empty plaintext is a
// single empty segment. Segment i is sealed with AES-256-GCM under the
// per-file 32-byte data key with
//
//	nonce           = uint64be(i) || 0x00 0x00 0x00 || last
//	additional data = "carebridge/segcrypt/v1" || uint64be(i) || last
//
// where last is 1 for the file's final segment and 0 otherwise. The
// ciphertext is the concatenation of the sealed segments, each Overhead
// bytes longer than its plaintext; there is no header. Because index and
// position are authenticated, truncation, reordering, dropping, duplicating
// or appending segments are all detected, as is a final segment moved to
// another position.
//
// A data key must encrypt exactly one file: the nonces repeat from file to
// file, which is safe only because every file has a fresh random key.
package segcrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	// SegmentSize is the number of plaintext bytes in every segment but the
	// last.
	SegmentSize = 64 << 10
	// Overhead is the number of bytes a sealed segment adds to its plaintext
	// (the GCM tag).
	Overhead = 16
	// KeySize is the size of a data key in bytes (AES-256).
	KeySize = 32

	// sealedSize is the size of a full sealed segment.
	sealedSize = SegmentSize + Overhead
	// bufSize holds a full sealed segment plus one byte of look-ahead.
	bufSize = sealedSize + 1
	// domain separates this format (and its version) from any other use of
	// the key.
	domain = "carebridge/segcrypt/v1"
	// noProgressLimit is how many empty reads in a row make a source fail
	// with io.ErrNoProgress instead of spinning.
	noProgressLimit = 100
)

var (
	// ErrCorrupt means the ciphertext failed authentication: it was
	// tampered with, truncated, reordered, extended, or opened with the
	// wrong key or the wrong segment indexes.
	ErrCorrupt = errors.New("segcrypt: ciphertext corrupt")
	// ErrKeySize means a data key is not KeySize bytes long.
	ErrKeySize = errors.New("segcrypt: data key must be 32 bytes")
	// ErrRange means a plaintext range lies outside the file.
	ErrRange = errors.New("segcrypt: range outside the plaintext")
)

// SegmentCount returns the number of segments of a plaintext of plainSize
// bytes; it is at least 1 because an empty plaintext is one empty segment.
// A negative size counts as 0.
func SegmentCount(plainSize int64) int64 {
	if plainSize <= 0 {
		return 1
	}
	return (plainSize-1)/SegmentSize + 1
}

// FinalSegment returns the index of the last segment of a plaintext of
// plainSize bytes: the final argument of DecryptReader.
func FinalSegment(plainSize int64) uint64 {
	return uint64(SegmentCount(plainSize) - 1)
}

// CiphertextSize returns the size of the ciphertext of a plaintext of
// plainSize bytes. A negative size counts as 0.
func CiphertextSize(plainSize int64) int64 {
	return max(plainSize, 0) + SegmentCount(plainSize)*Overhead
}

// Range locates the ciphertext that covers a plaintext byte range; see
// PlainRange.
type Range struct {
	First  uint64 // index of the first covering segment: DecryptReader's first
	Final  uint64 // index of the file's last segment: DecryptReader's final
	Offset int64  // ciphertext offset of segment First
	Length int64  // ciphertext bytes to fetch from Offset (whole segments)
	Skip   int64  // decrypted bytes to discard before the range starts
	Count  int64  // plaintext bytes in the range
}

// PlainRange maps the inclusive plaintext byte range [start, end] of a file
// of plainSize bytes to the ciphertext segments that cover it. To serve the
// range, fetch Length ciphertext bytes from Offset and either pass them to
// DecryptRange, or pass them to DecryptReader(src, key, First, Final),
// discard Skip bytes and read Count bytes.
//
// It returns ErrRange unless 0 <= start <= end < plainSize (an empty file
// has no satisfiable range).
func PlainRange(plainSize, start, end int64) (Range, error) {
	if start < 0 || end < start || end >= plainSize {
		return Range{}, fmt.Errorf("%w: bytes %d-%d of %d", ErrRange, start, end, plainSize)
	}
	first, last := start/SegmentSize, end/SegmentSize
	final := SegmentCount(plainSize) - 1
	stop := (last + 1) * sealedSize
	if last == final {
		stop = CiphertextSize(plainSize)
	}
	off := first * sealedSize
	return Range{
		First:  uint64(first),
		Final:  uint64(final),
		Offset: off,
		Length: stop - off,
		Skip:   start - first*SegmentSize,
		Count:  end - start + 1,
	}, nil
}

// segmentCipher seals and opens segments; it holds the nonce and the
// additional data so that sealing a segment allocates nothing.
type segmentCipher struct {
	aead  cipher.AEAD
	nonce [12]byte
	ad    [len(domain) + 9]byte
}

func newSegmentCipher(key []byte) (*segmentCipher, error) {
	if len(key) != KeySize {
		return nil, ErrKeySize
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("segcrypt: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("segcrypt: %w", err)
	}
	c := &segmentCipher{aead: aead}
	copy(c.ad[:], domain)
	return c, nil
}

// set puts segment index i and its last flag into the nonce and the
// additional data.
func (c *segmentCipher) set(i uint64, last bool) {
	var flag byte
	if last {
		flag = 1
	}
	binary.BigEndian.PutUint64(c.nonce[:8], i)
	c.nonce[11] = flag
	binary.BigEndian.PutUint64(c.ad[len(domain):], i)
	c.ad[len(domain)+8] = flag
}

// readFull reads into buf until it is full, src ends (io.EOF, possibly with
// n > 0) or src fails (its error). It differs from io.ReadFull in keeping
// io.EOF distinct from an io.ErrUnexpectedEOF returned by src itself.
func readFull(src io.Reader, buf []byte) (int, error) {
	n, empty := 0, 0
	for n < len(buf) {
		m, err := src.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
		if m > 0 {
			empty = 0
		} else if empty++; empty >= noProgressLimit {
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}

// encrypter is the reader returned by EncryptReader.
type encrypter struct {
	src      io.Reader
	c        *segmentCipher
	buf      []byte // bufSize: plaintext plus look-ahead, then the sealed segment
	out      []byte // sealed bytes not yet returned
	next     uint64 // index of the next segment
	carry    byte   // look-ahead byte: the first byte of the next segment
	carrying bool
	srcEOF   bool
	err      error // sticky; io.EOF after the final segment
}

// EncryptReader returns a reader of the ciphertext of src under key, a
// fresh 32-byte data key that must encrypt nothing else. It pulls from src
// on demand, one segment (plus one byte of look-ahead, to know which segment
// is the last) at a time, and holds about one segment in memory. An error
// from src is returned wrapped, so that errors.Is and errors.As see it.
func EncryptReader(src io.Reader, key []byte) (io.Reader, error) {
	c, err := newSegmentCipher(key)
	if err != nil {
		return nil, err
	}
	return &encrypter{src: src, c: c, buf: make([]byte, bufSize)}, nil
}

// Read implements io.Reader.
func (e *encrypter) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		e.seal()
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

// WriteTo implements io.WriterTo, which lets io.Copy write whole sealed
// segments without an intermediate buffer.
func (e *encrypter) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		for len(e.out) == 0 {
			if e.err == io.EOF {
				return total, nil
			}
			if e.err != nil {
				return total, e.err
			}
			e.seal()
		}
		n, err := w.Write(e.out)
		total += int64(n)
		e.out = e.out[n:]
		if err == nil && len(e.out) > 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return total, err
		}
	}
}

// seal reads the next segment from src and seals it into e.out, or sets
// e.err.
func (e *encrypter) seal() {
	n := 0
	if e.carrying {
		e.buf[0] = e.carry
		n, e.carrying = 1, false
	}
	if !e.srcEOF {
		m, err := readFull(e.src, e.buf[n:SegmentSize+1])
		n += m
		switch {
		case err == io.EOF:
			e.srcEOF = true
		case err != nil:
			e.err = fmt.Errorf("segcrypt: read plaintext: %w", err)
			return
		}
	}
	last := n <= SegmentSize
	if !last {
		e.carry, e.carrying = e.buf[SegmentSize], true
		n = SegmentSize
	}
	e.c.set(e.next, last)
	e.out = e.c.aead.Seal(e.buf[:0], e.c.nonce[:], e.buf[:n], e.c.ad[:])
	e.next++
	if last {
		e.err = io.EOF
	}
}

// decrypter is the reader returned by DecryptReader and DecryptRange.
type decrypter struct {
	src    io.Reader
	c      *segmentCipher
	buf    []byte // bufSize: a sealed segment, then its plaintext
	out    []byte // authenticated plaintext not yet returned
	next   uint64 // index of the next segment
	final  uint64
	skip   int64 // plaintext bytes still to discard
	left   int64 // plaintext bytes still to return; < 0: no limit
	srcEOF bool
	err    error // sticky; io.EOF after the final segment or the limit
}

// DecryptReader returns a reader of the plaintext of src, the ciphertext of
// a file under key starting at the segment with index first; final is the
// index of the file's last segment (FinalSegment of its plaintext size).
//
// Every segment is authenticated before any of its bytes are returned. A
// segment that fails authentication, a short segment before final, the end
// of src before final, and any byte after the final segment make the reader
// fail with an error that matches ErrCorrupt; the bytes returned before are
// those of the authentic segments that precede the fault. The check for
// trailing bytes happens when the final segment is read, so a caller that
// stops after the last byte it needs still detects them. An error from src
// is returned wrapped.
func DecryptReader(src io.Reader, key []byte, first, final uint64) (io.Reader, error) {
	if first > final {
		return nil, fmt.Errorf("segcrypt: first segment %d is after final segment %d", first, final)
	}
	c, err := newSegmentCipher(key)
	if err != nil {
		return nil, err
	}
	return &decrypter{src: src, c: c, buf: make([]byte, bufSize), next: first, final: final, left: -1}, nil
}

// DecryptRange returns a reader of exactly the plaintext bytes of r, given
// src holding the r.Length ciphertext bytes from r.Offset. It behaves like
// DecryptReader otherwise.
func DecryptRange(src io.Reader, key []byte, r Range) (io.Reader, error) {
	if r.Skip < 0 || r.Count < 0 {
		return nil, fmt.Errorf("segcrypt: invalid range: skip %d, count %d", r.Skip, r.Count)
	}
	rd, err := DecryptReader(src, key, r.First, r.Final)
	if err != nil {
		return nil, err
	}
	d := rd.(*decrypter)
	d.skip, d.left = r.Skip, r.Count
	if r.Count == 0 {
		d.err = io.EOF
	}
	return d, nil
}

// Read implements io.Reader. When p holds a whole segment and nothing is
// pending, the segment is opened straight into p, without a copy (p serves
// as scratch space: on an authentication failure it holds no plaintext
// but is overwritten all the same).
func (d *decrypter) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		if d.skip == 0 && len(p) >= SegmentSize {
			if n := len(d.open(p[:0])); n > 0 {
				d.count(n)
				return n, nil
			}
			continue // an empty final segment, or a failure
		}
		d.out = d.open(d.buf[:0])
	}
	n := copy(p, d.out)
	d.consume(n)
	return n, nil
}

// WriteTo implements io.WriterTo, which lets io.Copy write whole segments
// without an intermediate buffer.
func (d *decrypter) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		for len(d.out) == 0 {
			if d.err == io.EOF {
				return total, nil
			}
			if d.err != nil {
				return total, d.err
			}
			d.out = d.open(d.buf[:0])
		}
		chunk := d.out
		n, err := w.Write(chunk)
		total += int64(n)
		d.consume(n)
		if err == nil && n < len(chunk) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return total, err
		}
	}
}

// consume drops n returned bytes from d.out and counts them against the
// limit.
func (d *decrypter) consume(n int) {
	d.out = d.out[n:]
	d.count(n)
}

// count counts n returned bytes against the limit.
func (d *decrypter) count(n int) {
	if d.left < 0 {
		return
	}
	d.left -= int64(n)
	if d.left == 0 {
		d.out, d.err = nil, io.EOF
	}
}

// open reads the next segment into d.buf, authenticates it and decrypts it
// into dst (d.buf[:0]: in place; else a buffer of at least SegmentSize
// bytes that does not overlap d.buf), and returns the plaintext to hand
// out, after the skip and within the limit. On failure it sets d.err and
// returns nothing.
func (d *decrypter) open(dst []byte) []byte {
	i := d.next
	last := i == d.final
	want := sealedSize
	if last {
		want = bufSize // one more byte to detect trailing data
	}
	n := 0
	if !d.srcEOF {
		var err error
		n, err = readFull(d.src, d.buf[:want])
		switch {
		case err == io.EOF:
			d.srcEOF = true
		case err != nil:
			d.err = fmt.Errorf("segcrypt: read segment %d: %w", i, err)
			return nil
		}
	}
	switch {
	case !last && n < sealedSize:
		d.err = fmt.Errorf("%w: truncated at segment %d", ErrCorrupt, i)
		return nil
	case last && n > sealedSize:
		d.err = fmt.Errorf("%w: data after final segment %d", ErrCorrupt, i)
		return nil
	case n < Overhead:
		d.err = fmt.Errorf("%w: truncated at segment %d", ErrCorrupt, i)
		return nil
	}
	d.c.set(i, last)
	plain, err := d.c.aead.Open(dst, d.c.nonce[:], d.buf[:n], d.c.ad[:])
	if err != nil {
		d.err = fmt.Errorf("%w: segment %d failed authentication", ErrCorrupt, i)
		return nil
	}
	d.next++
	if last {
		d.err = io.EOF // after d.out is drained
	}
	if d.skip > 0 {
		s := min(d.skip, int64(len(plain)))
		plain, d.skip = plain[s:], d.skip-s
	}
	if d.left >= 0 && int64(len(plain)) > d.left {
		plain = plain[:d.left]
	}
	return plain
}
