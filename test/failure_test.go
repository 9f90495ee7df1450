package test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/storage"
)

// failingInsert is the real blob repository whose insert fails after the
// object was written: the moment between the two writes.
type failingInsert struct{ storage.BlobRepo }

func (failingInsert) Insert(context.Context, *storage.Blob) error {
	return errors.New("injected: connection lost before the row was written")
}

// failingInsertTx gives the storage core a BlobRepo whose Insert fails in
// every transaction.
type failingInsertTx struct{ postgres.StorageTx }

func (t failingInsertTx) WithinTx(ctx context.Context, fn func(context.Context, storage.Repos) error) error {
	return t.StorageTx.WithinTx(ctx, func(ctx context.Context, r storage.Repos) error {
		r.Blobs = failingInsert{r.Blobs}
		return fn(ctx, r)
	})
}

func TestIntegrationUpload_FailureBetweenObjectAndRowLeavesNothing(t *testing.T) {
	w := newWorld(t, withS3)
	ctx := context.Background()
	db, err := postgres.New(ctx, w.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store, err := s3.New(ctx, w.s3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range storage.Containers {
		if err := store.EnsureContainer(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	ring, err := keyring.New("k1", key(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	var puts int
	counting := &countingStore{ObjectStore: store, puts: &puts}
	svc := storage.NewService(db.Blobs(), failingInsertTx{db.StorageTx()}, counting, ring, db, 4<<20)

	for _, encrypted := range []bool{false, true} {
		_, err := svc.Upload(core.WithActor(ctx, core.Actor{Subject: "alice"}), storage.UploadInput{
			OriginalFilename: "r.pdf", ContentType: "application/pdf", FileSize: int64(len(pdf)),
			Encrypted: encrypted, Body: bytes.NewReader(pdf),
		})
		if err == nil {
			t.Fatal("upload succeeded although the row insert failed")
		}
	}
	if puts != 2 {
		t.Fatalf("%d objects were written; the failure must come after the write", puts)
	}
	if w.rows() != 0 || w.objects() != 0 {
		t.Fatalf("left %d rows and %d objects", w.rows(), w.objects())
	}
}

type countingStore struct {
	storage.ObjectStore
	puts *int
}

func (c *countingStore) Put(ctx context.Context, ct storage.Container, name string, r io.Reader, size int64) error {
	err := c.ObjectStore.Put(ctx, ct, name, r, size)
	if err == nil {
		*c.puts++
	}
	return err
}
