package s3

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/carebridge/carebridge/core/storage"
)

// Listing a container, and sweeping the multipart uploads that never finished.

// List calls fn for every object of c's bucket, a page of ListObjectsV2
// at a time.
func (s *Store) List(ctx context.Context, c storage.Container, fn func(name string, modified time.Time) error) error {
	bucket := s.cfg.bucket(c)
	pages := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{Bucket: &bucket})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", bucket, err)
		}
		for _, o := range page.Contents {
			if err := fn(aws.ToString(o.Key), aws.ToTime(o.LastModified)); err != nil {
				return err
			}
		}
	}
	return nil
}

// SweepIncomplete aborts the multipart uploads of c's bucket begun before
// cutoff and never completed (the process died mid-upload; a failed upload
// aborts its own), a page of ListMultipartUploads at a time, and returns
// how many it aborted. An upload another instance aborted meanwhile is
// skipped, not counted.
//
// A page goes on after the last key of the one before (a key-marker
// without an upload-id-marker): names are never reused, so a key has one
// upload at most, and a key marker, unlike an upload-id marker, stays
// valid when that upload has just been aborted.
func (s *Store) SweepIncomplete(ctx context.Context, c storage.Container, cutoff time.Time) (int, error) {
	bucket := s.cfg.bucket(c)
	in := &awss3.ListMultipartUploadsInput{Bucket: &bucket, MaxUploads: aws.Int32(s.sweepPage)}
	aborted := 0
	for {
		page, err := s.client.ListMultipartUploads(ctx, in)
		if isNotFound(err) {
			return aborted, nil // a container never ensured holds nothing
		}
		if err != nil {
			return aborted, fmt.Errorf("list multipart uploads of %s: %w", bucket, err)
		}
		for _, u := range page.Uploads {
			if u.Initiated == nil || !u.Initiated.Before(cutoff) {
				continue
			}
			_, err := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &bucket, Key: u.Key, UploadId: u.UploadId})
			switch {
			case err == nil:
				aborted++
			case isNotFound(err) || apiCode(err) == "NoSuchUpload":
				// another instance was first
			default:
				return aborted, fmt.Errorf("abort multipart upload %s of %s: %w", aws.ToString(u.Key), bucket, err)
			}
		}
		next := aws.ToString(page.NextKeyMarker)
		if !aws.ToBool(page.IsTruncated) || next <= aws.ToString(in.KeyMarker) {
			return aborted, nil // the last page, or a server that does not move on
		}
		in.KeyMarker = &next
	}
}

// sweepPage is how many multipart uploads one listing of the sweeper asks
// for (S3's most).
const sweepPage = 1000
