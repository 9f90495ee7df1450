package storage

import (
	"context"
	"io"
	"time"

	"github.com/carebridge/carebridge/core"
)

//go:generate go tool moq -rm -out ports_moq_test.go . BlobRepo ObjectStore KeyRing Members Transactor Scanner Scan

// ObjectStore keeps opaque objects in containers. Object names are generated
// by this core and never come from a client.
type ObjectStore interface {
	// EnsureContainer creates the container when it is missing.
	EnsureContainer(ctx context.Context, c Container) error
	// Put stores exactly size bytes read from r under name, in a container
	// that EnsureContainer made. When r fails, Put fails, leaves nothing
	// behind, and returns an error that wraps the reader's error; when r
	// yields a different number of bytes, the error wraps ErrSizeMismatch.
	Put(ctx context.Context, c Container, name string, r io.Reader, size int64) error
	// Get opens name for reading length bytes from offset; length < 0 reads
	// to the end. A missing object is ErrObjectNotFound; an offset past the
	// end is ErrRangeNotSatisfiable (at the end: an empty read).
	Get(ctx context.Context, c Container, name string, offset, length int64) (io.ReadCloser, error)
	// Delete removes name; a missing object is not an error.
	Delete(ctx context.Context, c Container, name string) error
	// List calls fn with the name and last-modified time of every object
	// of c (not the store's own temporary files), a page at a time; an
	// error from fn stops it.
	List(ctx context.Context, c Container, fn func(name string, modified time.Time) error) error
	// SweepIncomplete removes what writes to c that never finished left
	// behind and that began before cutoff — temporary files, incomplete
	// multipart uploads — and returns how many it removed. Finished
	// objects are never touched; something already gone is not an error,
	// so several instances may sweep at once.
	SweepIncomplete(ctx context.Context, c Container, cutoff time.Time) (int, error)
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
}

// BlobRepo keeps blob entries (table blob_entries).
type BlobRepo interface {
	// Insert stores b and sets its ID, CreatedAt and UpdatedAt.
	Insert(ctx context.Context, b *Blob) error
	// Get returns the entry; a missing one is ErrBlobNotFound.
	Get(ctx context.Context, id int64) (Blob, error)
	// Delete removes the entry and returns it as it was; a missing one is
	// ErrBlobNotFound.
	Delete(ctx context.Context, id int64) (Blob, error)
	// Known returns which of the object names an entry of container c
	// names.
	Known(ctx context.Context, c Container, names []string) (map[string]bool, error)
}

// Transactor runs a change and its events as one transaction: fn's
// writes through r, events included, commit together or not at all.
type Transactor interface {
	WithinTx(ctx context.Context, fn func(ctx context.Context, r Repos) error) error
}

// Repos are the repositories of one transaction.
type Repos struct {
	Blobs  BlobRepo
	Outbox core.Outbox
}

// KeyRing wraps and unwraps per-file data keys with master keys.
type KeyRing interface {
	// Wrap seals dataKey with the current master key and returns that key's
	// id. Without a configured key it returns ErrEncryptionKeyMissing.
	Wrap(dataKey []byte) (keyID string, wrapped []byte, err error)
	// Unwrap opens a data key sealed by the master key keyID (current or
	// previous). An unknown id or a tampered key is ErrEncryptionKeyUnknown
	// or ErrBlobCorrupt.
	Unwrap(keyID string, wrapped []byte) ([]byte, error)
}

// Members tells the role a subject has in the business a location belongs
// to; app wires it.
type Members interface {
	// LocationRole returns subject's role in the business of location id,
	// "" when subject is not a member; a missing location is
	// ErrLocationNotFound.
	LocationRole(ctx context.Context, locationID int64, subject string) (core.Role, error)
}

// Scanner checks uploaded files for malware (clamd). Its failures are
// ErrScannerUnavailable (wrapping the cause): an upload that cannot be
// scanned is refused.
type Scanner interface {
	// Scan starts the scan of one file. A scanner that is busy waits a
	// bounded time for room, then fails with ErrScannerUnavailable.
	Scan(ctx context.Context) (Scan, error)
	// Ping reports whether the scanner answers.
	Ping(ctx context.Context) error
}

// Scan is the scan of one file. Write streams the file's bytes to the
// scanner (the service reads them back from the store once the file is
// stored, so a scan lasts as long as the scanner takes, whatever the
// client's pace); Verdict ends the file and waits for the answer.
type Scan interface {
	io.Writer
	// Verdict ends the file and returns the scanner's answer: the name of
	// the signature that matched, "" when the file is clean.
	Verdict() (signature string, err error)
	// Close releases the scan (its connection); safe after Verdict and
	// more than once.
	Close() error
}
