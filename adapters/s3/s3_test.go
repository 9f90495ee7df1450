package s3_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/core/storage/storagetest"
	"github.com/carebridge/carebridge/test/s3test"
)

// newStore returns a store on srv with a bucket prefix of its own, so every
// caller sees empty containers, and the smallest part size, so the
// contract's large objects go up as multipart uploads.
func newStore(t *testing.T, srv s3.Config) *s3.Store {
	t.Helper()
	cfg := srv
	cfg.BucketPrefix = "t" + strings.ToLower(rand.Text()[:10]) + "-"
	cfg.PartSize, cfg.MaxSinglePut = s3.MinPartSize, s3.MinPartSize
	st, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return st
}

// rawClient is an SDK client on srv, to look behind the adapter.
func rawClient(srv s3.Config) *awss3.Client {
	return awss3.New(awss3.Options{
		BaseEndpoint: aws.String("http://" + srv.Endpoint),
		Region:       srv.Region,
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}, nil
		}),
	})
}

func TestIntegrationStore_PassesTheObjectStoreContract(t *testing.T) {
	srv := s3test.Start(t)
	storagetest.TestObjectStore(t, func(t *testing.T) storage.ObjectStore {
		return newStore(t, srv)
	})
}

func TestIntegrationStore_PassesTheContractWithSinglePutsOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	srv := s3test.Start(t)
	storagetest.TestObjectStore(t, func(t *testing.T) storage.ObjectStore {
		cfg := srv
		cfg.BucketPrefix = "s" + strings.ToLower(rand.Text()[:10]) + "-"
		st, err := s3.New(t.Context(), cfg) // default part size: 64 MiB
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return st
	})
}

func TestIntegrationEnsureContainer_CreatesPrefixedBuckets(t *testing.T) {
	srv := s3test.Start(t)
	st := newStore(t, srv)
	for _, c := range storage.Containers {
		if err := st.EnsureContainer(t.Context(), c); err != nil {
			t.Fatalf("EnsureContainer(%s): %v", c, err)
		}
	}
	out, err := rawClient(srv).ListBuckets(t.Context(), &awss3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, b := range out.Buckets {
		have[aws.ToString(b.Name)] = true
	}
	for _, c := range storage.Containers {
		if !have[st.Bucket(c)] {
			t.Errorf("bucket %s missing; have %v", st.Bucket(c), have)
		}
	}
}

func TestIntegrationPut_LeavesNoMultipartUploadBehindOnFailure(t *testing.T) {
	ctx := t.Context()
	srv := s3test.Start(t)
	st := newStore(t, srv)
	if err := st.EnsureContainer(ctx, storage.ContainerUploads); err != nil {
		t.Fatal(err)
	}
	const size = 3*s3.MinPartSize + 100
	errBoom := errors.New("boom")
	failing := &storagetest.FailingReader{R: storagetest.Pattern(1, 2*s3.MinPartSize+10), Err: errBoom}
	if err := st.Put(ctx, storage.ContainerUploads, "fails", failing, size); !errors.Is(err, errBoom) {
		t.Fatalf("Put = %v, want %v", err, errBoom)
	}
	if err := st.Put(ctx, storage.ContainerUploads, "long", storagetest.Pattern(1, size+1), size); !errors.Is(err, storage.ErrSizeMismatch) {
		t.Fatalf("Put = %v, want ErrSizeMismatch", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	r := &cancelAfter{r: storagetest.Pattern(1, size), after: s3.MinPartSize + 1, cancel: cancel}
	if err := st.Put(cancelled, storage.ContainerUploads, "cancelled", r, size); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put = %v, want context.Canceled", err)
	}

	client := rawClient(srv)
	bucket := st.Bucket(storage.ContainerUploads)
	ups, err := client.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups.Uploads {
		t.Errorf("multipart upload left behind: %s %s", aws.ToString(u.Key), aws.ToString(u.UploadId))
	}
	objs, err := client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs.Contents {
		t.Errorf("object left behind: %s (%d bytes)", aws.ToString(o.Key), aws.ToInt64(o.Size))
	}
}

func TestIntegrationPing_FailsWithWrongCredentials(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv
	cfg.SecretKey = "wrong" + srv.SecretKey
	st, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(t.Context()); err == nil {
		t.Fatal("Ping with a wrong secret: no error")
	}
	if err := st.EnsureContainer(t.Context(), storage.ContainerUploads); err == nil {
		t.Fatal("EnsureContainer with a wrong secret: no error")
	}
}

func TestPing_FailsWhenTheServerIsDown(t *testing.T) {
	cfg := s3.Config{Endpoint: "127.0.0.1:1", AccessKey: "a", SecretKey: "b"}
	st, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(t.Context()); err == nil {
		t.Fatal("Ping of a closed port: no error")
	}
}

func TestNew_RejectsAnInvalidConfig(t *testing.T) {
	for _, cfg := range []s3.Config{
		{},
		{Endpoint: "h:9000", AccessKey: "a"},
		{Endpoint: "h:9000", BucketPrefix: "UPPER"},
		{Endpoint: "h:9000", PartSize: 1 << 20},
	} {
		if _, err := s3.New(t.Context(), cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// cancelAfter calls cancel once it has yielded after bytes.
type cancelAfter struct {
	r      io.Reader
	after  int64
	n      int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n += int64(n); c.n >= c.after {
		c.cancel()
	}
	return n, err
}

func TestIntegrationSweepIncomplete_AbortsOnlyUploadsBegunBeforeTheCutoff(t *testing.T) {
	ctx := t.Context()
	srv := s3test.Start(t)
	st := newStore(t, srv)
	st.SetSweepPage(1) // one upload a page: the sweep goes on over aborted ones
	if err := st.EnsureContainer(ctx, storage.ContainerUploads); err != nil {
		t.Fatal(err)
	}
	client := rawClient(srv)
	bucket := st.Bucket(storage.ContainerUploads)
	// What a process killed mid-upload leaves: multipart uploads begun,
	// one with a part, never completed nor aborted.
	for _, key := range []string{"crashed/a", "crashed/b", "crashed/c"} {
		out, err := client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		if key == "crashed/b" {
			if _, err := client.UploadPart(ctx, &awss3.UploadPartInput{Bucket: &bucket, Key: aws.String(key), UploadId: out.UploadId,
				PartNumber: aws.Int32(1), Body: strings.NewReader("half an upload")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A finished multipart object.
	if err := st.Put(ctx, storage.ContainerUploads, "finished", storagetest.Pattern(3, 2*s3.MinPartSize+1), 2*s3.MinPartSize+1); err != nil {
		t.Fatal(err)
	}
	if n := len(uploads(t, client, bucket)); n != 3 {
		t.Fatalf("%d multipart uploads listed, want 3", n)
	}

	// The day-old cut-off of the service keeps them: they are fresh.
	if n, err := st.SweepIncomplete(ctx, storage.ContainerUploads, time.Now().Add(-storage.IncompleteAge)); n != 0 || err != nil {
		t.Fatalf("sweep with a day-old cut-off = %d, %v; want 0", n, err)
	}
	if n := len(uploads(t, client, bucket)); n != 3 {
		t.Fatalf("%d multipart uploads left by the sweep of fresh ones, want 3", n)
	}

	// A cut-off in the future makes them old: all are aborted.
	if n, err := st.SweepIncomplete(ctx, storage.ContainerUploads, time.Now().Add(time.Minute)); n != 3 || err != nil {
		t.Fatalf("sweep with a cut-off in the future = %d, %v; want 3", n, err)
	}
	for _, u := range uploads(t, client, bucket) {
		t.Errorf("multipart upload left: %s", aws.ToString(u.Key))
	}
	rc, err := st.Get(ctx, storage.ContainerUploads, "finished", 0, -1)
	if err != nil {
		t.Fatalf("the finished object after the sweep: %v", err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || len(got) != 2*s3.MinPartSize+1 {
		t.Fatalf("the finished object after the sweep: %d bytes, %v", len(got), err)
	}
	if n, err := st.SweepIncomplete(ctx, storage.ContainerUploads, time.Now().Add(time.Minute)); n != 0 || err != nil {
		t.Fatalf("second sweep = %d, %v; want 0", n, err)
	}
}

// uploads lists the multipart uploads in progress in bucket.
func uploads(t *testing.T, client *awss3.Client, bucket string) []types.MultipartUpload {
	t.Helper()
	out, err := client.ListMultipartUploads(t.Context(), &awss3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	return out.Uploads
}
