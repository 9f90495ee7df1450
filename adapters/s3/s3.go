// Package s3 is the object store on any S3-compatible server (AWS S3,
// versitygw, MinIO, …), reached with path-style addressing. Each container is
// one bucket named BucketPrefix + container.
//
// Uploads stream: an object of up to MaxSinglePut bytes goes up in one PutObject,
// a larger one as a multipart upload, and neither holds more than a copy
// buffer in memory. Payloads are sent unsigned (UNSIGNED-PAYLOAD; use Secure
// outside a trusted network), and checksums are only computed where an
// operation requires them, so non-seekable bodies work against every server.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/carebridge/carebridge/core/storage"
)

// cleanupTimeout bounds the requests that remove what a failed upload left.
const cleanupTimeout = 30 * time.Second

// Store is an object store on an S3-compatible server. It is safe for
// concurrent use.
type Store struct {
	client    *awss3.Client
	cfg       Config
	sweepPage int32 // multipart uploads per listing of SweepIncomplete
}

// New returns a store for cfg. It does not contact the server: call
// EnsureContainer or Ping for that.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("s3: invalid config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	if cfg.MaxSinglePut == 0 {
		cfg.MaxSinglePut = MaxPartSize
	}
	awsCfg, err := loadAWSConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("s3: load AWS config: %w", err)
	}
	scheme := "https"
	if !cfg.Secure {
		scheme = "http"
	}
	client := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		o.HTTPClient = newHTTPClient()
		o.BaseEndpoint = aws.String(scheme + "://" + cfg.Endpoint)
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &Store{client: client, cfg: cfg, sweepPage: sweepPage}, nil
}

// newHTTPClient returns the SDK's default HTTP client, except that its TCP
// connections close with a reset (SO_LINGER 0) instead of a FIN.
//
// When an upload fails midway, net/http closes the connection. After a FIN,
// some servers (versitygw through fasthttp's request streaming) take the
// early end of the body for the end of the request and store the truncated
// object. A reset makes the server's next read fail, so it stores nothing.
// Connections are only closed once they are done with or broken, so the
// reset loses nothing. Over TLS the close_notify alert still comes first:
// there, only servers that check Content-Length (AWS S3, MinIO, Ceph) are
// safe from truncated objects.
func newHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		dial := tr.DialContext
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if tcp, ok := conn.(*net.TCPConn); ok {
				if err := tcp.SetLinger(0); err != nil {
					conn.Close()
					return nil, fmt.Errorf("set linger: %w", err)
				}
			}
			return conn, err
		}
	})
}

// loadAWSConfig uses the static keys of cfg when it has them, and the
// default AWS credential chain (environment, shared files, IAM roles)
// otherwise.
func loadAWSConfig(ctx context.Context, cfg Config) (aws.Config, error) {
	if cfg.AccessKey != "" {
		return aws.Config{
			Region:                     cfg.Region,
			Credentials:                aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")),
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
			ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		}, nil
	}
	return awsconfig.LoadDefaultConfig(ctx,
		awsconfig.WithRegion(cfg.Region),
		awsconfig.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		awsconfig.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	)
}

// Bucket returns the bucket that holds container c.
func (s *Store) Bucket(c storage.Container) string {
	return s.cfg.bucket(c)
}

// EnsureContainer creates the container's bucket when it is missing.
func (s *Store) EnsureContainer(ctx context.Context, c storage.Container) error {
	bucket := s.cfg.bucket(c)
	_, err := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &bucket})
	if err == nil {
		return nil
	}
	if !isNotFound(err) {
		return fmt.Errorf("ensure bucket %s: %w", bucket, err)
	}
	in := &awss3.CreateBucketInput{Bucket: &bucket}
	if s.cfg.Region != DefaultRegion {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(s.cfg.Region),
		}
	}
	if _, err := s.client.CreateBucket(ctx, in); err != nil {
		var owned *types.BucketAlreadyOwnedByYou
		if errors.As(err, &owned) || apiCode(err) == "BucketAlreadyOwnedByYou" {
			return nil
		}
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	return nil
}

// Put stores exactly size bytes from r under name, streaming them. An object
// of up to MaxSinglePut bytes is one PutObject; a larger one is a multipart
// upload, aborted on any failure. When r fails, is short or is long (Put
// reads one byte past size to check), nothing is stored and the error wraps
// r's error or storage.ErrSizeMismatch.
func (s *Store) Put(ctx context.Context, c storage.Container, name string, r io.Reader, size int64) error {
	bucket := s.cfg.bucket(c)
	if size < 0 {
		return fmt.Errorf("put %s/%s: negative size %d", bucket, name, size)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s/%s: %w", bucket, name, err)
	}
	src := &source{r: r, size: size}
	var err error
	if size <= s.cfg.MaxSinglePut {
		err = s.putSingle(ctx, bucket, name, src)
	} else {
		err = s.putMultipart(ctx, bucket, name, src)
	}
	// From here on r is the caller's again: finish detaches it even from a
	// transport goroutine that is still sending a failed request.
	if serr := src.finish(err == nil); serr != nil {
		if err != nil && !errors.Is(err, serr) {
			serr = fmt.Errorf("%w; upload: %w", serr, err)
		}
		err = serr
	}
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	// Names are never reused, so whatever may have landed under this one
	// is the failed upload's and can go.
	s.removeBestEffort(ctx, bucket, name)
	return fmt.Errorf("put %s/%s: %w", bucket, name, err)
}

// streaming makes an upload request send its non-seekable body as
// UNSIGNED-PAYLOAD and never retry it, since the body cannot be rewound.
func streaming(o *awss3.Options) {
	o.RetryMaxAttempts = 1
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

func (s *Store) putSingle(ctx context.Context, bucket, name string, src *source) error {
	_, err := s.client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket:        &bucket,
		Key:           &name,
		Body:          src,
		ContentLength: aws.Int64(src.size),
	}, streaming)
	return err
}

func (s *Store) putMultipart(ctx context.Context, bucket, name string, src *source) (err error) {
	partSize := s.cfg.PartSize
	if src.size > partSize*maxParts {
		// Keep within the part limit: round the part size up to whole MiB.
		partSize = ((src.size+maxParts-1)/maxParts + 1<<20 - 1) &^ (1<<20 - 1)
		if partSize > MaxPartSize {
			return fmt.Errorf("object of %d bytes is larger than S3 allows", src.size)
		}
	}

	created, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &bucket, Key: &name})
	if err != nil {
		return fmt.Errorf("create multipart upload: %w", err)
	}
	uploadID := created.UploadId
	defer func() {
		if err != nil {
			err = errors.Join(err, s.abort(ctx, bucket, name, uploadID))
		}
	}()

	var parts []types.CompletedPart
	for off, num := int64(0), int32(1); off < src.size; off, num = off+partSize, num+1 {
		n := min(partSize, src.size-off)
		out, err := s.client.UploadPart(ctx, &awss3.UploadPartInput{
			Bucket:        &bucket,
			Key:           &name,
			UploadId:      uploadID,
			PartNumber:    aws.Int32(num),
			Body:          &part{r: io.LimitReader(src, n)},
			ContentLength: aws.Int64(n),
		}, streaming)
		if err != nil {
			return fmt.Errorf("upload part %d: %w", num, err)
		}
		if got := src.consumed(); got != off+n {
			return fmt.Errorf("upload part %d: sent up to byte %d, want %d", num, got, off+n)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
	}
	// The last part only went out once the source was found exhausted.
	if err := src.finish(true); err != nil {
		return err
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket:          &bucket,
		Key:             &name,
		UploadId:        uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return fmt.Errorf("complete multipart upload: %w", err)
	}
	return nil
}

// abort cancels a multipart upload with a context of its own, so that a
// cancelled request still cleans up.
func (s *Store) abort(ctx context.Context, bucket, name string, uploadID *string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, err := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{
		Bucket: &bucket, Key: &name, UploadId: uploadID,
	})
	if err != nil && !isNotFound(err) && apiCode(err) != "NoSuchUpload" {
		return fmt.Errorf("abort multipart upload: %w", err)
	}
	return nil
}

// removeBestEffort deletes name after a failed upload, with a context of its
// own. It ignores errors: the upload has failed already.
func (s *Store) removeBestEffort(ctx context.Context, bucket, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &bucket, Key: &name})
}

// Get opens name for reading length bytes from offset with a Range request;
// a negative length reads to the end, and a length past the end stops
// there. A missing object is storage.ErrObjectNotFound; an offset past the
// end is storage.ErrRangeNotSatisfiable.
func (s *Store) Get(ctx context.Context, c storage.Container, name string, offset, length int64) (io.ReadCloser, error) {
	bucket := s.cfg.bucket(c)
	if offset < 0 {
		return nil, fmt.Errorf("get %s/%s: negative offset %d", bucket, name, offset)
	}
	if length == 0 {
		return s.empty(ctx, bucket, name, offset)
	}
	in := &awss3.GetObjectInput{Bucket: &bucket, Key: &name}
	if offset > 0 || length > 0 {
		rng := "bytes=" + strconv.FormatInt(offset, 10) + "-"
		if length > 0 && length <= math.MaxInt64-offset {
			rng += strconv.FormatInt(offset+length-1, 10)
		}
		in.Range = &rng
	}
	out, err := s.client.GetObject(ctx, in)
	switch {
	case err == nil:
		return out.Body, nil
	case isNotFound(err):
		return nil, fmt.Errorf("get %s/%s: %w", bucket, name, storage.ErrObjectNotFound)
	case isInvalidRange(err):
		// S3 refuses a range that starts at the end, which for us is
		// an empty read (of an empty object, say).
		return s.empty(ctx, bucket, name, offset)
	default:
		return nil, fmt.Errorf("get %s/%s: %w", bucket, name, err)
	}
}

// empty returns an empty reader when name exists and has at least offset
// bytes.
func (s *Store) empty(ctx context.Context, bucket, name string, offset int64) (io.ReadCloser, error) {
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &bucket, Key: &name})
	switch {
	case isNotFound(err):
		return nil, fmt.Errorf("get %s/%s: %w", bucket, name, storage.ErrObjectNotFound)
	case err != nil:
		return nil, fmt.Errorf("get %s/%s: %w", bucket, name, err)
	}
	if size := aws.ToInt64(out.ContentLength); offset > size {
		return nil, fmt.Errorf("get %s/%s: offset %d of %d bytes: %w", bucket, name, offset, size, storage.ErrRangeNotSatisfiable)
	}
	return io.NopCloser(strings.NewReader("")), nil
}

// Delete removes name; a missing object (or bucket) is not an error.
func (s *Store) Delete(ctx context.Context, c storage.Container, name string) error {
	bucket := s.cfg.bucket(c)
	_, err := s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &bucket, Key: &name})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete %s/%s: %w", bucket, name, err)
	}
	return nil
}

// Ping checks that the server answers and accepts the credentials, with a
// HeadBucket of the uploads bucket; a missing bucket still counts as
// reachable.
func (s *Store) Ping(ctx context.Context) error {
	bucket := s.cfg.bucket(storage.ContainerUploads)
	_, err := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &bucket})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("ping s3 %s: %w", s.cfg.Endpoint, err)
	}
	return nil
}

// isNotFound reports whether err says the key or the bucket does not exist.
func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	var (
		noKey    *types.NoSuchKey
		notFound *types.NotFound
		noBucket *types.NoSuchBucket
	)
	if errors.As(err, &noKey) || errors.As(err, &notFound) || errors.As(err, &noBucket) {
		return true
	}
	switch apiCode(err) {
	case "NoSuchKey", "NotFound", "NoSuchBucket":
		return true
	}
	return httpStatus(err) == http.StatusNotFound
}

func isInvalidRange(err error) bool {
	return apiCode(err) == "InvalidRange" || httpStatus(err) == http.StatusRequestedRangeNotSatisfiable
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
