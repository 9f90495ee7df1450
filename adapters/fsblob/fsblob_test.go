package fsblob_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/fsblob"
	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/core/storage/storagetest"
)

func newStore(t *testing.T) (*fsblob.Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "blobs")
	s, err := fsblob.New(dir)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func TestStore_PassesTheObjectStoreContract(t *testing.T) {
	storagetest.TestObjectStore(t, func(t *testing.T) storage.ObjectStore {
		s, dir := newStore(t)
		t.Cleanup(func() { assertNoTempFiles(t, dir) })
		return s
	})
}

func TestNew_CreatesTheRootDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "blobs")
	s, err := fsblob.New(dir)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("root %s not created: %v", dir, err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func TestNew_RejectsAnEmptyDirectory(t *testing.T) {
	if _, err := fsblob.New(""); err == nil {
		t.Fatal("New(\"\"): no error")
	}
}

func TestStore_LaysObjectsOutByContainerAndName(t *testing.T) {
	ctx := t.Context()
	s, dir := newStore(t)
	if err := s.EnsureContainer(ctx, storage.ContainerDocuments); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, storage.ContainerDocuments, "2026/x.pdf", strings.NewReader("pdf"), 3); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "documents", "2026", "x.pdf"))
	if err != nil || string(got) != "pdf" {
		t.Fatalf("file = %q, %v; want %q", got, err, "pdf")
	}
}

func TestStore_RefusesNamesThatEscapeTheRoot(t *testing.T) {
	ctx := t.Context()
	s, dir := newStore(t)
	if err := s.EnsureContainer(ctx, storage.ContainerUploads); err != nil {
		t.Fatal(err)
	}
	// A file beside the root that an escape would reach.
	outside := filepath.Join(filepath.Dir(dir), "outside")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}

	names := []string{
		"", "../outside", "../../outside", "/etc/passwd", "a/../../outside", "a/../b",
		"./a", "a/./b", "a//b", "a/", "/a", "..", ".", "a\\b", "..\\outside", "a\x00b",
		"a b", "a%2F..%2Fb", "ä", "a:b", "~/x", strings.Repeat("a", fsblob.MaxNameLen+1),
		".tmp-abc", "a/.tmp-abc",
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if err := fsblob.ValidateName(name); !errors.Is(err, fsblob.ErrInvalidName) {
				t.Errorf("ValidateName = %v, want ErrInvalidName", err)
			}
			err := s.Put(ctx, storage.ContainerUploads, name, strings.NewReader("x"), 1)
			if !errors.Is(err, fsblob.ErrInvalidName) {
				t.Errorf("Put = %v, want ErrInvalidName", err)
			}
			rc, err := s.Get(ctx, storage.ContainerUploads, name, 0, -1)
			if err == nil {
				rc.Close()
			}
			if !errors.Is(err, fsblob.ErrInvalidName) {
				t.Errorf("Get = %v, want ErrInvalidName", err)
			}
			if err := s.Delete(ctx, storage.ContainerUploads, name); !errors.Is(err, fsblob.ErrInvalidName) {
				t.Errorf("Delete = %v, want ErrInvalidName", err)
			}
		})
	}
	if got, err := os.ReadFile(outside); err != nil || string(got) != "secret" {
		t.Fatalf("outside file = %q, %v; want it untouched", got, err)
	}
}

func TestStore_RefusesContainersThatEscapeTheRoot(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	for _, c := range []storage.Container{"", "..", ".", "../x", "a/b", "/tmp", "a\\b"} {
		if err := s.EnsureContainer(ctx, c); !errors.Is(err, fsblob.ErrInvalidName) {
			t.Errorf("EnsureContainer(%q) = %v, want ErrInvalidName", c, err)
		}
		if err := s.Put(ctx, c, "x", strings.NewReader("x"), 1); !errors.Is(err, fsblob.ErrInvalidName) {
			t.Errorf("Put(%q) = %v, want ErrInvalidName", c, err)
		}
	}
}

func TestStore_DoesNotFollowSymlinksOutOfTheRoot(t *testing.T) {
	ctx := t.Context()
	s, dir := newStore(t)
	if err := s.EnsureContainer(ctx, storage.ContainerUploads); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Someone with access to the directory plants a link to the outside.
	if err := os.Symlink(outside, filepath.Join(dir, "uploads", "link")); err != nil {
		t.Fatal(err)
	}

	rc, err := s.Get(ctx, storage.ContainerUploads, "link/secret", 0, -1)
	if err == nil {
		data, _ := io.ReadAll(rc)
		rc.Close()
		t.Fatalf("Get through a symlink read %q, want an error", data)
	}
	if err := s.Put(ctx, storage.ContainerUploads, "link/planted", strings.NewReader("x"), 1); err == nil {
		t.Error("Put through a symlink: no error")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("planted file outside the root: %v", err)
	}
	if err := s.Delete(ctx, storage.ContainerUploads, "link/secret"); err == nil {
		if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
			t.Errorf("Delete through a symlink removed a file outside the root: %v", err)
		}
	}
}

func TestPut_NeedsAnEnsuredContainer(t *testing.T) {
	s, _ := newStore(t)
	if err := s.Put(t.Context(), storage.ContainerTemp, "x", strings.NewReader("x"), 1); err == nil {
		t.Fatal("Put into a container that was never ensured: no error")
	}
}

func TestPut_LeavesNoTemporaryFileOnFailure(t *testing.T) {
	ctx := t.Context()
	s, dir := newStore(t)
	if err := s.EnsureContainer(ctx, storage.ContainerUploads); err != nil {
		t.Fatal(err)
	}
	errBoom := errors.New("boom")
	r := &storagetest.FailingReader{R: storagetest.Pattern(1, 100_000), Err: errBoom}
	if err := s.Put(ctx, storage.ContainerUploads, "d/x", r, 200_000); !errors.Is(err, errBoom) {
		t.Fatalf("Put = %v, want %v", err, errBoom)
	}
	if err := s.Put(ctx, storage.ContainerUploads, "d/y", storagetest.Pattern(1, 10), 20); err == nil {
		t.Fatal("short Put: no error")
	}
	entries, err := os.ReadDir(filepath.Join(dir, "uploads", "d"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
}

// assertNoTempFiles fails when a temporary file is left anywhere in dir.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Errorf("walk %s: %v", dir, err)
	}
}

func TestSweepIncomplete_RemovesOldTemporaryFilesOnly(t *testing.T) {
	ctx := t.Context()
	s, dir := newStore(t)
	if err := s.EnsureContainer(ctx, storage.ContainerUploads); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kept", "d/kept-old"} {
		if err := s.Put(ctx, storage.ContainerUploads, name, strings.NewReader("object"), 6); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	write := func(rel string, modified time.Time) string {
		p := filepath.Join(dir, "uploads", filepath.FromSlash(rel))
		if err := os.WriteFile(p, []byte("half an upload"), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, modified, modified); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := []string{write(".tmp-old", now.Add(-25*time.Hour)), write("d/.tmp-old-nested", now.Add(-48*time.Hour))}
	fresh := write(".tmp-fresh", now.Add(-time.Hour))
	// A finished object as old as the temporary files stays.
	oldObject := filepath.Join(dir, "uploads", "d", "kept-old")
	if err := os.Chtimes(oldObject, now.Add(-48*time.Hour), now.Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}

	n, err := s.SweepIncomplete(ctx, storage.ContainerUploads, now.Add(-storage.IncompleteAge))
	if err != nil || n != len(old) {
		t.Fatalf("SweepIncomplete = %d, %v; want %d", n, err, len(old))
	}
	for _, p := range old {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	for _, p := range []string{fresh, oldObject, filepath.Join(dir, "uploads", "kept")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if n, err := s.SweepIncomplete(ctx, storage.ContainerUploads, now.Add(-storage.IncompleteAge)); n != 0 || err != nil {
		t.Errorf("second sweep = %d, %v; want 0", n, err)
	}
}
