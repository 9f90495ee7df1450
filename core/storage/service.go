package storage

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/storage/segcrypt"
)

// cleanupTimeout bounds the removal of an object after a failed upload; it
// runs even when the request's context is already cancelled.
const cleanupTimeout = 30 * time.Second

// Service holds the blob-storage use cases.
type Service struct {
	blobs     BlobRepo
	tx        Transactor
	objects   ObjectStore
	keys      KeyRing
	members   Members
	maxUpload int64
	readAhead *ReadAheadPool
	scanner   Scanner
}

// Option tunes a Service.
type Option func(*Service)

// WithReadAhead makes encrypted downloads borrow their read-ahead buffers
// from pool; without it the service has a pool of DefaultReadAheadBytes of
// its own.
func WithReadAhead(pool *ReadAheadPool) Option {
	return func(s *Service) { s.readAhead = pool }
}

// WithScanner makes every upload pass a malware scan before it is kept
// (fail closed: an upload that cannot be scanned is refused).
func WithScanner(sc Scanner) Option {
	return func(s *Service) { s.scanner = sc }
}

// NewService returns the storage core. maxUpload is the largest accepted
// file in bytes.
func NewService(blobs BlobRepo, tx Transactor, objects ObjectStore, keys KeyRing, members Members, maxUpload int64, opts ...Option) *Service {
	s := &Service{blobs: blobs, tx: tx, objects: objects, keys: keys, members: members, maxUpload: maxUpload}
	for _, o := range opts {
		o(s)
	}
	if s.readAhead == nil {
		s.readAhead = NewReadAheadPool(DefaultReadAheadBytes)
	}
	return s
}

// UploadInput is what a caller sends to upload one file. Body yields the
// file's bytes; the service reads it once, as a stream.
type UploadInput struct {
	OriginalFilename   string
	ContentType        string
	FileSize           int64
	Encrypted          bool
	Container          string // "" means uploads
	BusinessLocationID string // "" when absent
	PracticeID         string // "" when absent
	Body               io.Reader
}

// Upload checks in, streams the file to the object store (encrypting it
// when asked) and records its blob entry. A failed upload leaves neither an
// object nor a row.
func (s *Service) Upload(ctx context.Context, in UploadInput) (Blob, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return Blob{}, core.ErrUnauthenticated
	}
	b, err := s.checkUpload(ctx, actor, in)
	if err != nil {
		return Blob{}, err
	}

	body := bufio.NewReaderSize(in.Body, segcrypt.SegmentSize)
	if err := sniffType(in, body); err != nil {
		return Blob{}, err
	}

	// One pass over the file: the digest sees the plaintext as it is
	// read, before it is encrypted and stored.
	exact := &exactReader{r: body, remaining: in.FileSize}
	digest := sha256.New()
	var src io.Reader = io.TeeReader(exact, digest)
	size := in.FileSize
	var dataKey []byte
	if in.Encrypted {
		src, dataKey, err = s.encrypt(&b, src)
		if err != nil {
			return Blob{}, err
		}
		size = segcrypt.CiphertextSize(in.FileSize)
	}

	// The object gets a fresh name; its row is committed only once the
	// scanner has found the stored file clean.
	b.Name = newObjectName()
	if err := s.objects.Put(ctx, b.Container, b.Name, src, size); err != nil {
		s.removeObject(ctx, b)
		if exact.err != nil {
			return Blob{}, exact.err
		}
		return Blob{}, fmt.Errorf("store object %s/%s: %w", b.Container, b.Name, err)
	}
	if err := s.scanStored(ctx, b, dataKey); err != nil {
		s.removeObject(ctx, b)
		return Blob{}, err
	}
	b.SHA256 = hex.EncodeToString(digest.Sum(nil))
	if err := s.insert(ctx, &b); err != nil {
		s.removeObject(ctx, b)
		return Blob{}, fmt.Errorf("insert blob entry: %w", err)
	}
	return b, nil
}

// sniffType checks that the first bytes of body, which stay to be read,
// are of the type in declares.
func sniffType(in UploadInput, body *bufio.Reader) error {
	head, err := body.Peek(SniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return bodyError(err)
	}
	_, err = DetectType(in.OriginalFilename, in.ContentType, head)
	return err
}

// insert records b's entry and commits its uploaded event with it.
func (s *Service) insert(ctx context.Context, b *Blob) error {
	return s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		if err := r.Blobs.Insert(ctx, b); err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, blobEvent(core.BlobUploaded, *b))
	})
}

// checkUpload validates everything that can be judged before reading the
// file and returns the entry to be stored.
func (s *Service) checkUpload(ctx context.Context, actor core.Actor, in UploadInput) (Blob, error) {
	if in.Body == nil {
		return Blob{}, ErrFileMissing
	}
	if err := checkText("originalFilename", in.OriginalFilename, 255, true); err != nil {
		return Blob{}, err
	}
	if err := checkText("contentType", in.ContentType, 255, true); err != nil {
		return Blob{}, err
	}
	if err := checkText("practiceId", in.PracticeID, 100, false); err != nil {
		return Blob{}, err
	}
	if in.FileSize < 0 {
		return Blob{}, core.Invalid("invalid_file_size", "fileSize must be a non-negative number of bytes")
	}
	if in.FileSize > s.maxUpload {
		return Blob{}, ErrFileTooLarge.WithMessage("File is larger than the maximum upload size of %d bytes", s.maxUpload)
	}
	container, err := ParseContainer(in.Container)
	if err != nil {
		return Blob{}, err
	}
	if in.BusinessLocationID != "" {
		if err := s.checkLocation(ctx, actor, in.BusinessLocationID); err != nil {
			return Blob{}, err
		}
	}
	return Blob{
		Container:          container,
		OriginalFilename:   in.OriginalFilename,
		ContentType:        MediaType(in.ContentType),
		Size:               in.FileSize,
		Encrypted:          in.Encrypted,
		UploadedBy:         actor.Subject,
		BusinessLocationID: in.BusinessLocationID,
		PracticeID:         in.PracticeID,
	}, nil
}

func checkText(field, v string, max int, required bool) error {
	switch {
	case v == "" && required:
		return core.Invalid("missing_field", "%s is required", field)
	case len(v) > max:
		return core.Invalid("invalid_field", "%s must be at most %d bytes", field, max)
	case !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0:
		return core.Invalid("invalid_field", "%s must be UTF-8 text without control characters", field)
	}
	return nil
}

// checkLocation lets an upload name a business location only when the
// caller is a member of its business; any other location is reported as
// missing. The id must be written as it is stored and reported (digits
// only): the location checked is then the one the row, its event and its
// audit event name.
func (s *Service) checkLocation(ctx context.Context, actor core.Actor, id string) error {
	n, ok := core.ParseID(id)
	if !ok {
		return ErrInvalidLocationID
	}
	role, err := s.members.LocationRole(ctx, n, actor.Subject)
	if errors.Is(err, ErrLocationNotFound) || (err == nil && role == "") {
		return ErrLocationNotFound
	}
	if err != nil {
		return fmt.Errorf("role at location %d: %w", n, err)
	}
	return nil
}

// encrypt wraps a fresh data key for b and returns src encrypted with it,
// and the key (the scan reads the stored file back with it).
func (s *Service) encrypt(b *Blob, src io.Reader) (io.Reader, []byte, error) {
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, nil, fmt.Errorf("data key: %w", err)
	}
	keyID, wrapped, err := s.keys.Wrap(dataKey)
	if err != nil {
		return nil, nil, err
	}
	enc, err := segcrypt.EncryptReader(src, dataKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypt: %w", err)
	}
	b.KeyID, b.WrappedKey = keyID, wrapped
	return enc, dataKey, nil
}

func (s *Service) removeObject(ctx context.Context, b Blob) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	// The store leaves nothing behind a failed Put; this also covers a
	// failed row insert and a deleted row. An object left here has no row:
	// the orphan sweeper removes it.
	_ = s.objects.Delete(ctx, b.Container, b.Name)
}

// RemoveObject deletes object name of container c once no blob entry
// names it: the entry went with another change (a replaced logo's, in the
// transaction that replaced it), whoever uploaded it. An object still
// named by an entry is kept. A failure leaves the object to the orphan
// sweeper.
func (s *Service) RemoveObject(ctx context.Context, container, name string) error {
	c, err := ParseContainer(container)
	if err != nil || name == "" {
		return fmt.Errorf("remove object %q/%q: not an object of the store", container, name)
	}
	known, err := s.blobs.Known(ctx, c, []string{name})
	if err != nil {
		return err
	}
	if known[name] {
		return fmt.Errorf("remove object %s/%s: a blob entry still names it", c, name)
	}
	if err := s.objects.Delete(ctx, c, name); err != nil {
		return fmt.Errorf("remove object %s/%s: %w", c, name, err)
	}
	return nil
}

// Metadata returns the entry of blob id when the caller may read it.
func (s *Service) Metadata(ctx context.Context, id int64) (Blob, error) {
	return s.get(ctx, id, read)
}

// Delete removes blob id: its row first, which commits the change (and
// the request's audit event with it), then its object. An object whose
// removal fails is left to the orphan sweeper (SweepOrphans): the blob is
// gone either way, and a failure to delete the row changes nothing.
func (s *Service) Delete(ctx context.Context, id int64) error {
	b, err := s.get(ctx, id, remove)
	if err != nil {
		return err
	}
	err = s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		deleted, err := r.Blobs.Delete(ctx, id)
		if err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, blobEvent(core.BlobDeleted, deleted))
	})
	if err != nil {
		return fmt.Errorf("delete blob %d: %w", id, err)
	}
	s.removeObject(ctx, b)
	return nil
}

// blobEvent is the event of type t about b, of the business of its
// location.
func blobEvent(t core.EventType, b Blob) core.Event {
	return core.BlobEvent(t, b.ID, string(b.Container), b.BusinessLocationID, b.BusinessID)
}

// access is what a caller wants to do with a blob.
type access int

const (
	read   access = iota // metadata and download
	remove               // delete
)

// allowed is the access rule of a blob: its uploader may do anything; a
// member of the business of its location (role, "" for none) may read it,
// and an owner or admin may delete it. A staff member asking to delete is
// refused; anyone else is told the blob does not exist.
func allowed(uploader bool, role core.Role, a access) error {
	switch {
	case uploader:
		return nil
	case role == "":
		return ErrBlobNotFound
	case a == remove && !role.Manages():
		return core.ErrInsufficientRole.WithMessage("Your role (%s) may delete only the files you uploaded", role)
	default:
		return nil
	}
}

// get loads blob id when the caller may access it so (allowed).
func (s *Service) get(ctx context.Context, id int64, a access) (Blob, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return Blob{}, core.ErrUnauthenticated
	}
	if id <= 0 {
		return Blob{}, ErrBlobNotFound
	}
	b, err := s.blobs.Get(ctx, id)
	if err != nil {
		return Blob{}, err
	}
	uploader := b.UploadedBy == actor.Subject
	var role core.Role
	if !uploader && b.BusinessLocationID != "" {
		// Rows stored before ids were read strictly may hold "+5" or "05":
		// they keep the access they had.
		if loc, err := strconv.ParseInt(b.BusinessLocationID, 10, 64); err == nil {
			role, err = s.members.LocationRole(ctx, loc, actor.Subject)
			if err != nil && !errors.Is(err, ErrLocationNotFound) {
				return Blob{}, fmt.Errorf("role at location %d: %w", loc, err)
			}
		}
	}
	if err := allowed(uploader, role, a); err != nil {
		return Blob{}, err
	}
	return b, nil
}

// newObjectName returns a fresh random object name: 32 hex digits.
func newObjectName() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// exactReader yields exactly remaining bytes from r. More or fewer bytes
// fail with ErrSizeMismatch; a failure of r itself is kept as well, so the
// caller can tell the client's fault from the store's.
type exactReader struct {
	r         io.Reader
	remaining int64
	err       error
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.remaining == 0 {
		// One more byte tells an exact body from a longer one.
		var one [1]byte
		n, err := io.ReadFull(e.r, one[:])
		switch {
		case n > 0:
			e.err = ErrSizeMismatch.WithMessage("fileSize does not match the bytes received: the file is longer")
		case errors.Is(err, io.EOF):
			return 0, io.EOF
		default:
			e.err = bodyError(err)
		}
		return 0, e.err
	}
	if int64(len(p)) > e.remaining {
		p = p[:e.remaining]
	}
	n, err := e.r.Read(p)
	e.remaining -= int64(n)
	switch {
	case errors.Is(err, io.EOF) && e.remaining > 0:
		e.err = ErrSizeMismatch.WithMessage("fileSize does not match the bytes received: the file is %d bytes shorter", e.remaining)
		return n, e.err
	case err != nil && !errors.Is(err, io.EOF):
		e.err = bodyError(err)
		return n, e.err
	}
	return n, nil
}

// bodyError classifies a failure to read the client's file: a *core.Error
// (such as ErrFileTooLarge from the HTTP adapter) is kept; anything else is
// an interrupted upload.
func bodyError(err error) error {
	var ce *core.Error
	if errors.As(err, &ce) {
		return err
	}
	return &core.Error{Kind: core.KindInvalid, Code: "upload_interrupted", Message: "Reading the uploaded file failed", Err: err}
}
