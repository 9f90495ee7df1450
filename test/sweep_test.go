package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/core/storage"
)

// Two instances sweep at once, as app's sweeper does (orphans, then
// unfinished uploads, under the claim): each orphan object and each
// incomplete multipart upload goes once, and no object with an entry goes.
func TestIntegrationSweep_TwoInstancesAtOnce(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(nil)
	tok := w.token("alice")
	var kept []string
	for i := range 3 {
		r := s.upload(tok, fileFields(fmt.Sprintf("f%d.txt", i), "text/plain", []byte("kept file"))...)
		if r.status != 201 {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		kept = append(kept, fmt.Sprint(int64(r.json(t)["id"].(float64))))
	}
	// Objects a crash left without an entry.
	for i := range 5 {
		_, err := w.raw.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String(w.s3.BucketPrefix + "uploads"),
			Key: aws.String(fmt.Sprintf("orphan%02d", i)), Body: bytes.NewReader([]byte("orphan"))})
		if err != nil {
			t.Fatal(err)
		}
	}
	if w.objects() != 8 {
		t.Fatalf("%d objects before the sweep", w.objects())
	}
	// Multipart uploads a killed process left, never completed.
	uploads := aws.String(w.s3.BucketPrefix + "uploads")
	for i := range 3 {
		_, err := w.raw.CreateMultipartUpload(context.Background(), &awss3.CreateMultipartUploadInput{Bucket: uploads,
			Key: aws.String(fmt.Sprintf("crashed%02d", i))})
		if err != nil {
			t.Fatal(err)
		}
	}

	instance := func() (*postgres.Store, *storage.Service) {
		db, err := postgres.New(context.Background(), w.dbURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		objects, err := s3.New(context.Background(), w.s3)
		if err != nil {
			t.Fatal(err)
		}
		return db, storage.NewService(db.Blobs(), db.StorageTx(), objects, nil, db, 1<<20)
	}
	var (
		wg                       sync.WaitGroup
		mu                       sync.Mutex
		removed, aborted, rounds int
	)
	cutoff := time.Now().Add(time.Minute) // every object counts as old enough
	for range 2 {
		db, svc := instance()
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ran, err := db.SweepClaim(context.Background(), func(ctx context.Context) error {
					n, err := svc.SweepOrphans(ctx, cutoff)
					m, ierr := svc.SweepIncomplete(ctx, cutoff)
					mu.Lock()
					removed += n
					aborted += m
					mu.Unlock()
					return errors.Join(err, ierr)
				})
				if err != nil {
					t.Errorf("sweep: %v", err)
				}
				if ran {
					mu.Lock()
					rounds++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if removed != 5 || rounds < 1 || w.objects() != 3 {
		t.Fatalf("removed %d in %d rounds; %d objects left, want 3", removed, rounds, w.objects())
	}
	left, err := w.raw.ListMultipartUploads(context.Background(), &awss3.ListMultipartUploadsInput{Bucket: uploads})
	if err != nil || aborted != 3 || len(left.Uploads) != 0 {
		t.Fatalf("aborted %d multipart uploads, %v; want 3 and none left (%d are)", aborted, err, len(left.Uploads))
	}
	for _, id := range kept {
		if r := s.do("GET", "/cloud-blob/download/"+id, tok, nil); r.status != 200 || string(r.body) != "kept file" {
			t.Fatalf("download %s after the sweep: %d", id, r.status)
		}
	}
}
