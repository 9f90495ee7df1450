package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/storage/segcrypt"
)

// fixture is a Service over moq mocks: an in-memory object store, an
// in-memory blob table, a toy key ring and one business location whose
// business has the members "owner", "admin" and "staff".
type fixture struct {
	svc     *Service
	objects *ObjectStoreMock
	blobs   *BlobRepoMock
	keys    *KeyRingMock
	tx      *TransactorMock

	mu     sync.Mutex
	data   map[string][]byte
	rows   map[int64]Blob
	events []core.Event // of the transactions that committed
}

const ownedLocation = "7"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{data: map[string][]byte{}, rows: map[int64]Blob{}}
	f.objects = &ObjectStoreMock{
		PutFunc: func(ctx context.Context, c Container, name string, r io.Reader, size int64) error {
			b, err := io.ReadAll(r)
			if err != nil {
				return fmt.Errorf("put: %w", err)
			}
			if int64(len(b)) != size {
				return fmt.Errorf("put: got %d bytes, want %d", len(b), size)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			f.data[string(c)+"/"+name] = b
			return nil
		},
		GetFunc: func(ctx context.Context, c Container, name string, off, n int64) (io.ReadCloser, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			b, ok := f.data[string(c)+"/"+name]
			if !ok {
				return nil, ErrObjectNotFound
			}
			b = b[off:]
			if n >= 0 {
				b = b[:n]
			}
			return io.NopCloser(bytes.NewReader(b)), nil
		},
		DeleteFunc: func(ctx context.Context, c Container, name string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.data, string(c)+"/"+name)
			return nil
		},
	}
	f.blobs = &BlobRepoMock{
		InsertFunc: func(ctx context.Context, b *Blob) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			b.ID = int64(len(f.rows) + 1)
			f.rows[b.ID] = *b
			return nil
		},
		GetFunc: func(ctx context.Context, id int64) (Blob, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			b, ok := f.rows[id]
			if !ok {
				return Blob{}, ErrBlobNotFound
			}
			return b, nil
		},
		DeleteFunc: func(ctx context.Context, id int64) (Blob, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			b, ok := f.rows[id]
			if !ok {
				return Blob{}, ErrBlobNotFound
			}
			delete(f.rows, id)
			return b, nil
		},
	}
	// The toy ring "wraps" by reversing the key: enough to see that the
	// service stores what Wrap returns and decrypts with what Unwrap gives.
	f.keys = &KeyRingMock{
		WrapFunc: func(k []byte) (string, []byte, error) { return "k1", reversed(k), nil },
		UnwrapFunc: func(id string, w []byte) ([]byte, error) {
			if id != "k1" {
				return nil, ErrEncryptionKeyUnknown
			}
			return reversed(w), nil
		},
	}
	members := &MembersMock{LocationRoleFunc: func(ctx context.Context, id int64, sub string) (core.Role, error) {
		if fmt.Sprint(id) != ownedLocation {
			return "", ErrLocationNotFound
		}
		return map[string]core.Role{"owner": core.RoleOwner, "admin": core.RoleAdmin, "staff": core.RoleStaff}[sub], nil
	}}
	f.tx = &TransactorMock{WithinTxFunc: func(ctx context.Context, fn func(context.Context, Repos) error) error {
		o := &outbox{}
		if err := fn(ctx, Repos{Blobs: f.blobs, Outbox: o}); err != nil {
			return err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.events = append(f.events, o.events...)
		return nil
	}}
	f.svc = NewService(f.blobs, f.tx, f.objects, f.keys, members, 1<<20)
	return f
}

// outbox keeps the events of one transaction.
type outbox struct{ events []core.Event }

func (o *outbox) Emit(_ context.Context, e core.Event) error {
	o.events = append(o.events, e)
	return nil
}

func reversed(b []byte) []byte {
	r := make([]byte, len(b))
	for i, c := range b {
		r[len(b)-1-i] = c
	}
	return r
}

func as(sub string) context.Context {
	return core.WithActor(context.Background(), core.Actor{Subject: sub})
}

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("pixels"), 40000)...)

func pngUpload(body []byte) UploadInput {
	return UploadInput{
		OriginalFilename: "scan.png",
		ContentType:      "image/png",
		FileSize:         int64(len(body)),
		Body:             bytes.NewReader(body),
	}
}

func readAll(t *testing.T, d *Download) []byte {
	t.Helper()
	defer d.Body.Close()
	b, err := io.ReadAll(d.Body)
	if err != nil {
		t.Fatalf("read download: %v", err)
	}
	return b
}

func TestUpload_StoresObjectAndRow(t *testing.T) {
	f := newFixture(t)
	in := pngUpload(pngBytes)
	in.PracticeID = "practice-1"
	b, err := f.svc.Upload(as("alice"), in)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pngBytes)
	if b.ID == 0 || b.UploadedBy != "alice" || b.Container != ContainerUploads || b.Size != int64(len(pngBytes)) ||
		b.SHA256 != hex.EncodeToString(sum[:]) || b.Encrypted || b.PracticeID != "practice-1" || len(b.Name) != 32 {
		t.Fatalf("unexpected entry %+v", b)
	}
	if got := f.data["uploads/"+b.Name]; !bytes.Equal(got, pngBytes) {
		t.Fatalf("stored %d bytes, want the %d uploaded", len(got), len(pngBytes))
	}
	if strings.Contains(b.Name, "scan") {
		t.Fatalf("object name %q comes from the client's filename", b.Name)
	}
}

func TestUpload_RejectsBadInputAndStoresNothing(t *testing.T) {
	text := []byte("hello")
	tests := []struct {
		name string
		edit func(*UploadInput)
		want *core.Error
	}{
		{"missing file", func(in *UploadInput) { in.Body = nil }, ErrFileMissing},
		{"missing filename", func(in *UploadInput) { in.OriginalFilename = "" }, &core.Error{Kind: core.KindInvalid, Code: "missing_field"}},
		{"missing content type", func(in *UploadInput) { in.ContentType = "" }, &core.Error{Kind: core.KindInvalid, Code: "missing_field"}},
		{"control character in filename", func(in *UploadInput) { in.OriginalFilename = "a\nb.txt" }, &core.Error{Kind: core.KindInvalid, Code: "invalid_field"}},
		{"bad container", func(in *UploadInput) { in.Container = "secrets" }, ErrInvalidContainer},
		{"negative size", func(in *UploadInput) { in.FileSize = -1 }, &core.Error{Kind: core.KindInvalid, Code: "invalid_file_size"}},
		{"declared size over the limit", func(in *UploadInput) { in.FileSize = 1<<20 + 1 }, ErrFileTooLarge},
		{"disallowed extension", func(in *UploadInput) { in.OriginalFilename = "run.exe" }, ErrFileTypeNotAllowed},
		{"content type disagrees with extension", func(in *UploadInput) { in.ContentType = "image/png" }, ErrFileTypeNotAllowed},
		{"bytes disagree with type", func(in *UploadInput) {
			in.OriginalFilename, in.ContentType = "a.pdf", "application/pdf"
		}, ErrFileTypeNotAllowed},
		{"location not a number", func(in *UploadInput) { in.BusinessLocationID = "seven" }, &core.Error{Kind: core.KindInvalid, Code: "invalid_business_location_id"}},
		{"location of someone else", func(in *UploadInput) { in.BusinessLocationID = ownedLocation }, ErrLocationNotFound},
		{"location that does not exist", func(in *UploadInput) { in.BusinessLocationID = "99" }, ErrLocationNotFound},
		{"shorter than declared", func(in *UploadInput) { in.FileSize = 6 }, ErrSizeMismatch},
		{"longer than declared", func(in *UploadInput) { in.FileSize = 4 }, ErrSizeMismatch},
		{"encrypted without a key", func(in *UploadInput) { in.Encrypted = true }, ErrEncryptionKeyMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.keys.WrapFunc = func([]byte) (string, []byte, error) { return "", nil, ErrEncryptionKeyMissing }
			in := UploadInput{OriginalFilename: "note.txt", ContentType: "text/plain", FileSize: int64(len(text)), Body: bytes.NewReader(text)}
			tt.edit(&in)
			_, err := f.svc.Upload(as("alice"), in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %s", err, tt.want.Code)
			}
			if len(f.data) != 0 || len(f.rows) != 0 {
				t.Fatalf("left %d objects and %d rows behind", len(f.data), len(f.rows))
			}
		})
	}
}

func TestUpload_RowInsertFailureRemovesObject(t *testing.T) {
	f := newFixture(t)
	f.blobs.InsertFunc = func(context.Context, *Blob) error { return errors.New("database gone") }
	_, err := f.svc.Upload(as("alice"), pngUpload(pngBytes))
	if err == nil || core.KindOf(err) != core.KindInternal {
		t.Fatalf("got %v, want an internal error", err)
	}
	if len(f.objects.PutCalls()) != 1 || len(f.data) != 0 {
		t.Fatalf("object left behind: %d puts, %d objects", len(f.objects.PutCalls()), len(f.data))
	}
}

func TestUpload_ARowRefusedForItsAuditEventKeepsTheReason(t *testing.T) {
	f := newFixture(t)
	refused := &core.Error{Kind: core.KindUnavailable, Code: "audit_unavailable", Message: "x"}
	f.blobs.InsertFunc = func(context.Context, *Blob) error { return fmt.Errorf("insert: %w", refused) }
	_, err := f.svc.Upload(as("alice"), pngUpload(pngBytes))
	if !errors.Is(err, refused) || len(f.data) != 0 {
		t.Fatalf("got %v with %d objects, want audit_unavailable and none", err, len(f.data))
	}
}

func TestUpload_ClientReadErrorIsReported(t *testing.T) {
	f := newFixture(t)
	in := pngUpload(pngBytes)
	in.Body = io.MultiReader(bytes.NewReader(pngBytes[:1000]), iotestErr{})
	_, err := f.svc.Upload(as("alice"), in)
	if core.KindOf(err) != core.KindInvalid || !strings.Contains(err.Error(), "upload_interrupted") {
		t.Fatalf("got %v, want upload_interrupted", err)
	}
	if len(f.data) != 0 || len(f.rows) != 0 {
		t.Fatal("left something behind")
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestUpload_AnyMemberMayUploadForTheLocation(t *testing.T) {
	for _, sub := range []string{"owner", "admin", "staff"} {
		f := newFixture(t)
		in := pngUpload(pngBytes)
		in.BusinessLocationID = ownedLocation
		b, err := f.svc.Upload(as(sub), in)
		if err != nil || b.BusinessLocationID != ownedLocation {
			t.Fatalf("%s: got %+v, %v", sub, b, err)
		}
	}
}

func TestAllowed_BlobAccessRule(t *testing.T) {
	for _, tt := range []struct {
		uploader bool
		role     core.Role
		a        access
		want     error
	}{
		{true, "", read, nil},
		{true, "", remove, nil},
		{true, core.RoleStaff, remove, nil},
		{false, core.RoleOwner, read, nil},
		{false, core.RoleOwner, remove, nil},
		{false, core.RoleAdmin, read, nil},
		{false, core.RoleAdmin, remove, nil},
		{false, core.RoleStaff, read, nil},
		{false, core.RoleStaff, remove, core.ErrInsufficientRole},
		{false, "", read, ErrBlobNotFound},
		{false, "", remove, ErrBlobNotFound},
	} {
		if err := allowed(tt.uploader, tt.role, tt.a); !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
			t.Errorf("allowed(uploader=%v, %q, %d) = %v, want %v", tt.uploader, tt.role, tt.a, err, tt.want)
		}
	}
}

func TestDelete_MembersOfTheLocationFollowTheirRole(t *testing.T) {
	for _, tt := range []struct {
		who  string
		want error
	}{
		{"owner", nil},
		{"admin", nil},
		{"staff", core.ErrInsufficientRole},
		{"mallory", ErrBlobNotFound},
	} {
		f := newFixture(t)
		in := pngUpload(pngBytes)
		in.BusinessLocationID = ownedLocation
		b, err := f.svc.Upload(as("owner"), in)
		if err != nil {
			t.Fatal(err)
		}
		f.rows[b.ID] = func(b Blob) Blob { b.UploadedBy = "someone"; return b }(f.rows[b.ID])
		err = f.svc.Delete(as(tt.who), b.ID)
		if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
			t.Errorf("%s deletes: got %v, want %v", tt.who, err, tt.want)
		}
		if _, gone := f.rows[b.ID]; gone == (tt.want == nil) {
			t.Errorf("%s deletes: row present = %v after %v", tt.who, gone, err)
		}
	}
}

func TestUpload_EncryptedIsCiphertextAtRestAndDecryptsOnDownload(t *testing.T) {
	f := newFixture(t)
	plain := bytes.Repeat([]byte("patient record line\n"), 20000) // ~400 KB, several segments
	in := UploadInput{OriginalFilename: "r.txt", ContentType: "text/plain", FileSize: int64(len(plain)), Encrypted: true, Body: bytes.NewReader(plain)}
	b, err := f.svc.Upload(as("alice"), in)
	if err != nil {
		t.Fatal(err)
	}
	stored := f.data["uploads/"+b.Name]
	if !b.Encrypted || b.KeyID != "k1" || len(b.WrappedKey) != 32 {
		t.Fatalf("entry %+v", b)
	}
	if int64(len(stored)) != segcrypt.CiphertextSize(int64(len(plain))) || bytes.Contains(stored, []byte("patient record")) {
		t.Fatal("the store holds plaintext")
	}
	sum := sha256.Sum256(plain)
	if b.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatal("sha256 is not of the plaintext")
	}
	d, err := f.svc.Download(as("alice"), b.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, d); !bytes.Equal(got, plain) {
		t.Fatal("download differs from upload")
	}
}

func TestDownload_Ranges(t *testing.T) {
	size := int64(3*segcrypt.SegmentSize + 100)
	plain := make([]byte, size)
	for i := range plain {
		plain[i] = byte('a' + i%26)
	}
	tests := []struct {
		name        string
		r           ByteRange
		start, want int64
	}{
		{"first byte", ByteRange{Start: 0, End: 0}, 0, 1},
		{"across a segment border", ByteRange{Start: segcrypt.SegmentSize - 10, End: segcrypt.SegmentSize + 10}, segcrypt.SegmentSize - 10, 21},
		{"open ended", ByteRange{Start: size - 5, End: -1}, size - 5, 5},
		{"end past the file is clamped", ByteRange{Start: 10, End: size * 2}, 10, size - 10},
		{"suffix", ByteRange{Suffix: 100}, size - 100, 100},
		{"suffix longer than the file", ByteRange{Suffix: size * 2}, 0, size},
		{"last segment only", ByteRange{Start: 3 * segcrypt.SegmentSize, End: -1}, 3 * segcrypt.SegmentSize, 100},
	}
	for _, encrypted := range []bool{false, true} {
		f := newFixture(t)
		in := UploadInput{OriginalFilename: "d.txt", ContentType: "text/plain", FileSize: size, Encrypted: encrypted, Body: bytes.NewReader(plain)}
		want := plain
		b, err := f.svc.Upload(as("alice"), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s encrypted=%v", tt.name, encrypted), func(t *testing.T) {
				r := tt.r
				d, err := f.svc.Download(as("alice"), b.ID, &r)
				if err != nil {
					t.Fatal(err)
				}
				got := readAll(t, d)
				if !d.Partial || d.Start != tt.start || d.Length != tt.want || !bytes.Equal(got, want[tt.start:tt.start+tt.want]) {
					t.Fatalf("start %d length %d (%d bytes), want start %d length %d", d.Start, d.Length, len(got), tt.start, tt.want)
				}
			})
		}
		for _, r := range []ByteRange{{Start: size, End: -1}, {Start: size + 10, End: size + 20}} {
			if _, err := f.svc.Download(as("alice"), b.ID, &r); !errors.Is(err, ErrRangeNotSatisfiable) {
				t.Fatalf("range %+v: got %v, want 416", r, err)
			}
		}
	}
}

func TestDownload_TamperedCiphertextIsRefused(t *testing.T) {
	plain := bytes.Repeat([]byte("abcdefgh"), 3*segcrypt.SegmentSize/8)
	for _, at := range []int{10, segcrypt.SegmentSize + 100, len(plain)} {
		t.Run(fmt.Sprint("byte ", at), func(t *testing.T) {
			f := newFixture(t)
			b, err := f.svc.Upload(as("alice"), UploadInput{OriginalFilename: "x.txt", ContentType: "text/plain", FileSize: int64(len(plain)), Encrypted: true, Body: bytes.NewReader(plain)})
			if err != nil {
				t.Fatal(err)
			}
			f.data["uploads/"+b.Name][at] ^= 1
			d, err := f.svc.Download(as("alice"), b.ID, nil)
			if err == nil {
				var got []byte
				got, err = io.ReadAll(d.Body)
				if !bytes.Equal(got, plain[:len(got)]) {
					t.Fatal("served bytes that are not the plaintext")
				}
			}
			if !errors.Is(err, ErrBlobCorrupt) {
				t.Fatalf("got %v, want ErrBlobCorrupt", err)
			}
		})
	}
}

func TestAccess_OthersSeeNothing(t *testing.T) {
	f := newFixture(t)
	mine, err := f.svc.Upload(as("alice"), pngUpload(pngBytes))
	if err != nil {
		t.Fatal(err)
	}
	in := pngUpload(pngBytes)
	in.BusinessLocationID = ownedLocation
	business, err := f.svc.Upload(as("owner"), in)
	if err != nil {
		t.Fatal(err)
	}
	// A row uploaded by someone else for the business's location: its
	// members may read it.
	f.rows[business.ID] = func(b Blob) Blob { b.UploadedBy = "someone"; return b }(f.rows[business.ID])

	for _, c := range []struct {
		who  string
		id   int64
		want error
	}{
		{"mallory", mine.ID, ErrBlobNotFound},
		{"owner", mine.ID, ErrBlobNotFound},
		{"alice", mine.ID, nil},
		{"owner", business.ID, nil},
		{"admin", business.ID, nil},
		{"staff", business.ID, nil},
		{"staff", mine.ID, ErrBlobNotFound},
		{"alice", business.ID, ErrBlobNotFound},
		{"alice", 999, ErrBlobNotFound},
		{"alice", -1, ErrBlobNotFound},
	} {
		if _, err := f.svc.Metadata(as(c.who), c.id); !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("metadata %s/%d: got %v, want %v", c.who, c.id, err, c.want)
		}
		d, err := f.svc.Download(as(c.who), c.id, nil)
		if d != nil {
			d.Body.Close()
		}
		if !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("download %s/%d: got %v, want %v", c.who, c.id, err, c.want)
		}
	}
	if err := f.svc.Delete(as("mallory"), mine.ID); !errors.Is(err, ErrBlobNotFound) {
		t.Fatalf("mallory deleted: %v", err)
	}
	if len(f.rows) != 2 || len(f.data) != 2 {
		t.Fatal("a refused delete removed something")
	}
	if _, err := f.svc.Metadata(context.Background(), mine.ID); !errors.Is(err, core.ErrUnauthenticated) {
		t.Fatalf("no actor: got %v", err)
	}
}

func TestDelete_RemovesObjectAndRow(t *testing.T) {
	f := newFixture(t)
	b, err := f.svc.Upload(as("alice"), pngUpload(pngBytes))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Delete(as("alice"), b.ID); err != nil {
		t.Fatal(err)
	}
	if len(f.rows) != 0 || len(f.data) != 0 {
		t.Fatal("delete left something")
	}
	if err := f.svc.Delete(as("alice"), b.ID); !errors.Is(err, ErrBlobNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestDelete_ARowThatCannotBeDeletedChangesNothing(t *testing.T) {
	f := newFixture(t)
	b, err := f.svc.Upload(as("alice"), pngUpload(pngBytes))
	if err != nil {
		t.Fatal(err)
	}
	// The row's transaction fails (the database, or the audit event
	// committed with it): the object stays, the blob is whole.
	f.blobs.DeleteFunc = func(context.Context, int64) (Blob, error) { return Blob{}, errors.New("audit event refused") }
	if err := f.svc.Delete(as("alice"), b.ID); err == nil {
		t.Fatal("delete succeeded without its row deleted")
	}
	if _, ok := f.rows[b.ID]; !ok || len(f.data) != 1 {
		t.Fatalf("row kept: %v, %d objects", ok, len(f.data))
	}
}

func TestDelete_AnObjectThatCannotBeRemovedIsLeftToTheSweeper(t *testing.T) {
	f := newFixture(t)
	b, err := f.svc.Upload(as("alice"), pngUpload(pngBytes))
	if err != nil {
		t.Fatal(err)
	}
	f.objects.DeleteFunc = func(context.Context, Container, string) error { return errors.New("store down") }
	if err := f.svc.Delete(as("alice"), b.ID); err != nil {
		t.Fatalf("delete: %v; the row is gone, so the blob is", err)
	}
	if _, ok := f.rows[b.ID]; ok {
		t.Fatal("row kept")
	}
	if len(f.data) != 1 {
		t.Fatalf("%d objects, want the one left for the sweeper", len(f.data))
	}
}

func TestUploadAndDelete_EmitTheirEventInTheirTransaction(t *testing.T) {
	f := newFixture(t)
	insert := f.blobs.InsertFunc
	f.blobs.InsertFunc = func(ctx context.Context, b *Blob) error {
		b.BusinessID = "biz-1" // the store finds the business of the location
		return insert(ctx, b)
	}
	in := pngUpload(pngBytes)
	in.BusinessLocationID = ownedLocation
	b, err := f.svc.Upload(as("staff"), in)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Delete(as("staff"), b.ID); err != nil {
		t.Fatal(err)
	}
	loc := ownedLocation
	want := []core.Event{
		{Type: core.BlobUploaded, BusinessID: "biz-1", Data: core.BlobData{BlobID: b.ID, ContainerName: string(b.Container), BusinessLocationID: &loc}},
		{Type: core.BlobDeleted, BusinessID: "biz-1", Data: core.BlobData{BlobID: b.ID, ContainerName: string(b.Container), BusinessLocationID: &loc}},
	}
	if len(f.events) != len(want) {
		t.Fatalf("events %+v", f.events)
	}
	for i, w := range want {
		e := f.events[i]
		d, ok := e.Data.(core.BlobData)
		wd := w.Data.(core.BlobData)
		if e.Type != w.Type || e.BusinessID != w.BusinessID || !ok || d.BlobID != wd.BlobID || d.ContainerName != wd.ContainerName ||
			d.BusinessLocationID == nil || *d.BusinessLocationID != loc {
			t.Errorf("event %d = %+v, want %+v", i, e, w)
		}
	}

	f.blobs.InsertFunc = func(context.Context, *Blob) error { return errors.New("database gone") }
	if _, err := f.svc.Upload(as("staff"), pngUpload(pngBytes)); err == nil {
		t.Fatal("upload succeeded")
	}
	if len(f.events) != 2 {
		t.Fatalf("a failed insert emitted: %+v", f.events[2:])
	}
}
