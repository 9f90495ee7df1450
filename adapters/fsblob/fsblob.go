// Package fsblob is the embedded object store: it keeps objects as files
// under a root directory, one directory per container (root/<container>/<name>).
//
// Every file operation goes through an os.Root, so no name, symlink or race
// can reach outside the root; names are validated as well, and writes are
// atomic (temporary file, exact size check, fsync, rename).
package fsblob

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/storage"
)

// MaxNameLen is the longest object name the store accepts.
const MaxNameLen = 255

// ErrInvalidName is returned for a container or object name that is empty,
// too long, has characters other than [A-Za-z0-9._-] and '/', or has an
// empty, "." or ".." segment.
var ErrInvalidName = errors.New("invalid object name")

const (
	dirPerm  = 0o750
	filePerm = 0o640
	// tempPrefix starts the names of files still being written.
	tempPrefix = ".tmp-"
	// copyBufSize is the buffer one Put streams through.
	copyBufSize = 64 << 10
)

// Store is an object store on the local file system. It is safe for
// concurrent use. Close releases its root directory.
type Store struct {
	root *os.Root
}

// New opens the store at dir, creating the directory when it is missing.
func New(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("fsblob: empty root directory")
	}
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("fsblob: create root: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("fsblob: open root: %w", err)
	}
	return &Store{root: root}, nil
}

// Close releases the root directory; the store is unusable afterwards.
func (s *Store) Close() error {
	return s.root.Close()
}

// EnsureContainer creates the container's directory when it is missing.
func (s *Store) EnsureContainer(ctx context.Context, c storage.Container) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ensure container %s: %w", c, err)
	}
	if err := validateContainer(c); err != nil {
		return fmt.Errorf("ensure container: %w", err)
	}
	if err := s.root.Mkdir(string(c), dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("ensure container %s: %w", c, err)
	}
	return nil
}

// Put writes exactly size bytes from r to c/name. It streams r into a
// temporary file beside the target, checks the byte count, syncs and renames
// the file into place; on any failure the temporary file is removed and
// nothing is left. A source with fewer or more bytes than size fails with an
// error wrapping storage.ErrSizeMismatch; a failing source, with an error
// wrapping the source's error.
func (s *Store) Put(ctx context.Context, c storage.Container, name string, r io.Reader, size int64) error {
	p, err := objectPath(c, name)
	if err != nil {
		return fmt.Errorf("put %s/%s: %w", c, name, err)
	}
	if size < 0 {
		return fmt.Errorf("put %s: negative size %d", p, size)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	if err := s.put(ctx, c, p, r, size); err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	return nil
}

func (s *Store) put(ctx context.Context, c storage.Container, p string, r io.Reader, size int64) (err error) {
	dir := path.Dir(p)
	if _, err := s.root.Stat(dir); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// The container must have been ensured; the directories of
		// nested names below it are created on demand.
		if _, err := s.root.Stat(string(c)); err != nil {
			return fmt.Errorf("container: %w", err)
		}
		if err := s.root.MkdirAll(dir, dirPerm); err != nil {
			return err
		}
	}

	tmp := path.Join(dir, tempPrefix+strings.ToLower(rand.Text()))
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			s.root.Remove(tmp)
		}
	}()

	if err := copyExact(ctx, f, r, size); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := s.root.Rename(tmp, p); err != nil {
		return err
	}
	// Make the rename durable; when that fails, the object goes again.
	if err := s.syncDir(dir); err != nil {
		s.root.Remove(p)
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

func (s *Store) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// copyExact copies exactly size bytes from r to w, checking ctx between
// chunks, and then makes sure r has nothing more to give.
func copyExact(ctx context.Context, w io.Writer, r io.Reader, size int64) error {
	buf := make([]byte, copyBufSize)
	var n int64
	for n < size {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := buf[:min(int64(len(buf)), size-n)]
		m, rerr := r.Read(chunk)
		if m > 0 {
			if _, err := w.Write(chunk[:m]); err != nil {
				return err
			}
			n += int64(m)
		}
		switch {
		case rerr == io.EOF && n < size:
			return fmt.Errorf("%w: source ended after %d of %d bytes", storage.ErrSizeMismatch, n, size)
		case rerr != nil && rerr != io.EOF:
			return fmt.Errorf("read source: %w", rerr)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return expectEOF(r, size)
}

// expectEOF reads r once more and fails unless it is exhausted.
func expectEOF(r io.Reader, size int64) error {
	var probe [1]byte
	for range 100 {
		m, err := r.Read(probe[:])
		switch {
		case m > 0:
			return fmt.Errorf("%w: source has more than %d bytes", storage.ErrSizeMismatch, size)
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("read source: %w", err)
		}
	}
	return fmt.Errorf("read source: %w", io.ErrNoProgress)
}

// Get opens c/name for reading length bytes from offset; a negative length
// reads to the end, and a length past the end stops there. A missing object
// is storage.ErrObjectNotFound; an offset past the end is
// storage.ErrRangeNotSatisfiable.
func (s *Store) Get(ctx context.Context, c storage.Container, name string, offset, length int64) (io.ReadCloser, error) {
	p, err := objectPath(c, name)
	if err != nil {
		return nil, fmt.Errorf("get %s/%s: %w", c, name, err)
	}
	if offset < 0 {
		return nil, fmt.Errorf("get %s: negative offset %d", p, offset)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s: %w", p, err)
	}
	f, err := s.root.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("get %s: %w", p, storage.ErrObjectNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("get %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("get %s: %w", p, storage.ErrObjectNotFound)
	}
	size := fi.Size()
	if offset > size {
		f.Close()
		return nil, fmt.Errorf("get %s: offset %d of %d bytes: %w", p, offset, size, storage.ErrRangeNotSatisfiable)
	}
	n := size - offset
	if length >= 0 && length < n {
		n = length
	}
	return &section{SectionReader: io.NewSectionReader(f, offset, n), f: f}, nil
}

// section reads part of an open file and closes the file.
type section struct {
	*io.SectionReader
	f *os.File
}

func (s *section) Close() error { return s.f.Close() }

// Delete removes c/name; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, c storage.Container, name string) error {
	p, err := objectPath(c, name)
	if err != nil {
		return fmt.Errorf("delete %s/%s: %w", c, name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	if err := s.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	return nil
}

// List calls fn for every object of container c, walking nested names;
// temporary files of writes in progress are left out.
func (s *Store) List(ctx context.Context, c storage.Container, fn func(name string, modified time.Time) error) error {
	if err := validateContainer(c); err != nil {
		return fmt.Errorf("list %s: %w", c, err)
	}
	return fs.WalkDir(s.root.FS(), string(c), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), tempPrefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted meanwhile
			}
			return err
		}
		return fn(strings.TrimPrefix(p, string(c)+"/"), info.ModTime())
	})
}

// SweepIncomplete removes the temporary files under c (writes that never
// reached their rename: the process died mid-upload) last written before
// cutoff, and returns how many it removed.
func (s *Store) SweepIncomplete(ctx context.Context, c storage.Container, cutoff time.Time) (int, error) {
	if err := validateContainer(c); err != nil {
		return 0, fmt.Errorf("sweep %s: %w", c, err)
	}
	removed := 0
	err := fs.WalkDir(s.root.FS(), string(c), func(p string, d fs.DirEntry, err error) error {
		if p == string(c) && errors.Is(err, fs.ErrNotExist) {
			return fs.SkipAll // a container never ensured holds nothing
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), tempPrefix) {
			return nil
		}
		info, err := d.Info()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // renamed or removed meanwhile
		case err != nil:
			return err
		case !info.ModTime().Before(cutoff):
			return nil // a write that may still be going on
		}
		switch err := s.root.Remove(p); {
		case err == nil:
			removed++
		case !errors.Is(err, fs.ErrNotExist): // else another sweep was first
			return err
		}
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("sweep %s: %w", c, err)
	}
	return removed, nil
}

// Ping reports whether the root directory is still there.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	fi, err := s.root.Stat(".")
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("ping: root %s is not a directory", s.root.Name())
	}
	return nil
}

// objectPath validates c and name and returns the object's path in the root.
func objectPath(c storage.Container, name string) (string, error) {
	if err := validateContainer(c); err != nil {
		return "", err
	}
	if err := ValidateName(name); err != nil {
		return "", err
	}
	return string(c) + "/" + name, nil
}

func validateContainer(c storage.Container) error {
	s := string(c)
	if strings.Contains(s, "/") || ValidateName(s) != nil {
		return fmt.Errorf("%w: container %q", ErrInvalidName, s)
	}
	return nil
}

// ValidateName reports whether name is an acceptable object name: 1 to
// MaxNameLen bytes of [A-Za-z0-9._-] and '/', with no empty, "." or ".."
// segment and no segment that starts like a temporary file.
func ValidateName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: length %d not in 1..%d", ErrInvalidName, len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		ok := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
			b == '.' || b == '_' || b == '-' || b == '/'
		if !ok {
			return fmt.Errorf("%w: %q has byte %#x at %d", ErrInvalidName, name, b, i)
		}
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return fmt.Errorf("%w: %q has segment %q", ErrInvalidName, name, seg)
		case strings.HasPrefix(seg, tempPrefix):
			return fmt.Errorf("%w: %q has reserved segment %q", ErrInvalidName, name, seg)
		}
	}
	return nil
}
