package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/storage"
)

// blobResponse is the contract's BlobResponseDto.
type blobResponse struct {
	ID                 int64     `json:"id"`
	BlobName           string    `json:"blobName"`
	ContainerName      string    `json:"containerName"`
	OriginalFilename   string    `json:"originalFilename"`
	ContentType        string    `json:"contentType"`
	FileSize           int64     `json:"fileSize"`
	IsEncrypted        bool      `json:"isEncrypted"`
	EncryptionKeyID    *string   `json:"encryptionKeyId"`
	UploadedBy         string    `json:"uploadedBy"`
	BusinessLocationID *string   `json:"businessLocationId"`
	PracticeID         *string   `json:"practiceId"`
	SHA256             string    `json:"sha256"`
	CreatedAt          time.Time `json:"createdAt"`
	UpdatedAt          time.Time `json:"updatedAt"`
}

func newBlobResponse(b storage.Blob) blobResponse {
	return blobResponse{
		ID:                 b.ID,
		BlobName:           b.Name,
		ContainerName:      string(b.Container),
		OriginalFilename:   b.OriginalFilename,
		ContentType:        b.ContentType,
		FileSize:           b.Size,
		IsEncrypted:        b.Encrypted,
		EncryptionKeyID:    optional(b.KeyID),
		UploadedBy:         b.UploadedBy,
		BusinessLocationID: optional(b.BusinessLocationID),
		PracticeID:         optional(b.PracticeID),
		SHA256:             b.SHA256,
		CreatedAt:          b.CreatedAt.UTC(),
		UpdatedAt:          b.UpdatedAt.UTC(),
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

var (
	errNotMultipart   = &core.Error{Kind: core.KindUnsupportedMedia, Code: "unsupported_media_type", Message: "Content-Type must be multipart/form-data"}
	errBadMultipart   = &core.Error{Kind: core.KindInvalid, Code: "invalid_multipart", Message: "The multipart body is malformed"}
	errPartAfterFile  = &core.Error{Kind: core.KindInvalid, Code: "part_after_file", Message: "Metadata parts must come before the file part"}
	errUnknownPart    = &core.Error{Kind: core.KindInvalid, Code: "unknown_field", Message: "Unknown form field"}
	errDuplicatePart  = &core.Error{Kind: core.KindInvalid, Code: "duplicate_field", Message: "Form field sent twice"}
	errFieldTooLong   = &core.Error{Kind: core.KindInvalid, Code: "invalid_field", Message: "Form field too long"}
	errInvalidID      = &core.Error{Kind: core.KindInvalid, Code: "invalid_id", Message: "id must be a positive integer"}
	errBodyTooLarge   = &core.Error{Kind: core.KindTooLarge, Code: "file_too_large", Message: "Request body is larger than the maximum upload size"}
	errInvalidBoolean = &core.Error{Kind: core.KindInvalid, Code: "invalid_field", Message: "isEncrypted must be true or false"}
	errInvalidSize    = &core.Error{Kind: core.KindInvalid, Code: "invalid_file_size", Message: "fileSize must be a non-negative whole number of bytes"}
	errMissingField   = &core.Error{Kind: core.KindInvalid, Code: "missing_field", Message: "A metadata part is missing"}
)

// copyBufferSize is the buffer of uploads and downloads: large transfers in
// few system calls. 1 MiB (not 256 KiB) took plain downloads from 0.87 to
// 0.96 of a minimal relay's rate and halved their reads and writes per MiB;
// a transfer holds one, from a pool.
const copyBufferSize = 1 << 20

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// maxFieldBytes bounds one metadata part of the upload form.
const maxFieldBytes = 4 << 10

// multipartSlack is what a form may add around the file's bytes.
const multipartSlack = 1 << 20

// upload streams the form: metadata parts first, then the file part, which
// goes to the storage core as a reader and is never buffered whole.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		s.writeError(w, r, errNotMultipart)
		return
	}
	if r.ContentLength > s.maxUpload+multipartSlack {
		s.writeError(w, r, errBodyTooLarge.WithMessage("File is larger than the maximum upload size of %d bytes", s.maxUpload))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.maxUpload+multipartSlack)
	rc := http.NewResponseController(w)
	body := &stallReader{r: r.Body, stall: stall{set: rc.SetReadDeadline, timeout: s.stallTimeout}}
	// mime/multipart reads in 4 KiB steps; a large buffer under it cuts the
	// read system calls from ~256 to ~4 per MiB.
	form := multipart.NewReader(bufio.NewReaderSize(body, copyBufferSize), params["boundary"])

	in, err := readUploadForm(form)
	if err != nil {
		s.writeError(w, r, bodyErr(err))
		return
	}
	ctx, err := s.auditWithChange(r, http.StatusCreated)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	blob, err := s.storage.Upload(ctx, in)
	// A long upload outlives the server's write time-out; the answer still goes out.
	_ = rc.SetWriteDeadline(time.Now().Add(s.stallTimeout))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.metrics.uploaded.Add(float64(blob.Size))
	auditResource(r.Context(), strconv.FormatInt(blob.ID, 10))
	auditBusiness(r.Context(), blob.BusinessID) // its committed event has it already
	writeJSON(w, http.StatusCreated, newBlobResponse(blob))
}

// readUploadForm reads the metadata parts up to the file part and returns
// the upload with the file part as its body.
func readUploadForm(form *multipart.Reader) (storage.UploadInput, error) {
	var in storage.UploadInput
	seen := map[string]bool{}
	size := ""
	for {
		part, err := form.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return in, err
		}
		name := part.FormName()
		if seen[name] {
			return in, errDuplicatePart.WithMessage("Form field %q sent twice", name)
		}
		seen[name] = true
		if name == "file" {
			if missing := missingMetadata(in, size); len(missing) > 0 {
				return in, metadataAfterFile(form, part, missing)
			}
			in.Body = &filePart{part: part, form: form}
			break
		}
		value, err := readField(part)
		if err != nil {
			return in, err
		}
		if err := setUploadField(&in, &size, name, value); err != nil {
			return in, err
		}
	}
	if in.Body == nil {
		return in, storage.ErrFileMissing
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || n < 0 {
		return in, errInvalidSize
	}
	in.FileSize = n
	return in, nil
}

// setUploadField sets the metadata part name of in to value; fileSize goes to
// size, parsed once the whole form is read.
func setUploadField(in *storage.UploadInput, size *string, name, value string) (err error) {
	switch name {
	case "originalFilename":
		in.OriginalFilename = value
	case "contentType":
		in.ContentType = value
	case "fileSize":
		*size = value
	case "isEncrypted":
		in.Encrypted, err = parseBool(value)
	case "businessLocationId":
		if _, ok := core.ParseID(value); !ok && value != "" {
			return storage.ErrInvalidLocationID
		}
		in.BusinessLocationID = value
	case "practiceId":
		in.PracticeID = value
	case "containerName":
		in.Container = value
	default:
		return errUnknownPart.WithMessage("Unknown form field %q", name)
	}
	return err
}

// missingMetadata names the required parts not yet read.
func missingMetadata(in storage.UploadInput, size string) []string {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"originalFilename", in.OriginalFilename}, {"contentType", in.ContentType}, {"fileSize", size},
	} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	return missing
}

// metadataAfterFile answers a file part that came before some required
// metadata. It reads past the file to tell the two mistakes apart: the
// metadata sent after the file (part_after_file, the form's ordering rule)
// or not sent at all (missing_field); both messages say the order.
func metadataAfterFile(form *multipart.Reader, file *multipart.Part, missing []string) error {
	if _, err := io.Copy(io.Discard, file); err != nil {
		return err
	}
	next, err := form.NextPart()
	switch {
	case errors.Is(err, io.EOF):
		names, verb := missing[0], "is"
		if n := len(missing); n > 1 {
			names, verb = strings.Join(missing[:n-1], ", ")+" and "+missing[n-1], "are"
		}
		return errMissingField.WithMessage("%s %s required; send the metadata parts before the file part", names, verb)
	case err != nil:
		return err
	}
	return partAfterFile(next.FormName())
}

func partAfterFile(name string) error {
	return errPartAfterFile.WithMessage("Form field %q comes after the file part; send the metadata parts "+
		"(originalFilename, contentType, fileSize, and any optional ones) first and the file part last", name)
}

func readField(part *multipart.Part) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxFieldBytes {
		return "", errFieldTooLong.WithMessage("Form field %q is longer than %d bytes", part.FormName(), maxFieldBytes)
	}
	return strings.TrimSpace(string(b)), nil
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "1":
		return true, nil
	case "false", "0", "":
		return false, nil
	}
	return false, errInvalidBoolean
}

// bodyErr classifies a failure to read the request body.
func bodyErr(err error) error {
	var tooLarge *http.MaxBytesError
	var ce *core.Error
	switch {
	case errors.As(err, &tooLarge):
		return errBodyTooLarge
	case errors.As(err, &ce):
		return err
	}
	return errBadMultipart.Wrap(err)
}

// filePart reads the file part. At its end it checks that no part follows
// it, so a form with a part after the file fails before anything is kept.
type filePart struct {
	part *multipart.Part
	form *multipart.Reader
}

func (f *filePart) Read(p []byte) (int, error) {
	// A part yields at most 4 KiB a call; filling p keeps the writes
	// downstream large.
	n, err := io.ReadFull(f.part, p)
	if err == nil || n > 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return n, nil
	}
	if !errors.Is(err, io.EOF) {
		return n, bodyErr(err)
	}
	next, err := f.form.NextPart()
	switch {
	case errors.Is(err, io.EOF):
		return 0, io.EOF
	case err != nil:
		return 0, bodyErr(err)
	}
	return 0, partAfterFile(next.FormName())
}

// stall pushes a connection deadline forward while a transfer moves, so a
// body or a client that moves no byte for timeout is cut off while a slow
// but steady transfer is not.
type stall struct {
	set     func(time.Time) error // SetReadDeadline or SetWriteDeadline
	timeout time.Duration
	next    time.Time
}

func (s *stall) push() {
	if now := time.Now(); now.After(s.next) {
		_ = s.set(now.Add(s.timeout)) // unsupported only by test recorders
		s.next = now.Add(s.timeout / 4)
	}
}

type stallReader struct {
	r io.Reader
	stall
}

func (s *stallReader) Read(p []byte) (int, error) {
	s.push()
	return s.r.Read(p)
}

type stallWriter struct {
	w io.Writer
	stall
}

func (s *stallWriter) Write(p []byte) (int, error) {
	s.push()
	return s.w.Write(p)
}

// blobID parses the path's blob id and names it as the request's audited
// resource.
func blobID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil || id <= 0 {
		return 0, errInvalidID
	}
	auditResource(r.Context(), strconv.FormatInt(id, 10))
	return id, nil
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	id, err := blobID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.storage.Metadata(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	auditBusiness(r.Context(), b.BusinessID)
	writeJSON(w, http.StatusOK, newBlobResponse(b))
}

func (s *Server) deleteBlob(w http.ResponseWriter, r *http.Request) {
	id, err := blobID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, err := s.auditWithChange(r, http.StatusOK)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.storage.Delete(ctx, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "File deleted successfully"})
}

// download streams the file's bytes, whole or one range, with the
// contract's headers. A failure after the headers are sent (a stored
// segment that fails authentication) aborts the connection, so the client
// sees a broken transfer and never wrong bytes.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	id, err := blobID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rng := parseRange(r.Header.Get("Range"))
	d, err := s.storage.Download(r.Context(), id, rng)
	if errors.Is(err, storage.ErrRangeNotSatisfiable) {
		if b, merr := s.storage.Metadata(r.Context(), id); merr == nil {
			auditBusiness(r.Context(), b.BusinessID)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", b.Size))
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer d.Body.Close()
	auditBusiness(r.Context(), d.Blob.BusinessID)

	h := w.Header()
	h.Set("Content-Type", d.Blob.ContentType)
	h.Set("Content-Length", strconv.FormatInt(d.Length, 10))
	h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+encodeRFC5987(d.Blob.OriginalFilename))
	h.Set("ETag", `"`+d.Blob.SHA256+`"`)
	h.Set("Last-Modified", d.Blob.UpdatedAt.UTC().Format(http.TimeFormat))
	h.Set("Cache-Control", "private, no-store")
	h.Set("Accept-Ranges", "bytes")
	status := http.StatusOK
	if d.Partial {
		status = http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", d.Start, d.Start+d.Length-1, d.Blob.Size))
	}
	w.WriteHeader(status)

	out := &stallWriter{w: w, stall: stall{set: http.NewResponseController(w).SetWriteDeadline, timeout: s.stallTimeout}}
	// A body that writes itself out (an encrypted file's read-ahead) sends
	// its own buffers and leaves buf unused.
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	n, err := io.CopyBuffer(out, d.Body, *buf)
	s.metrics.downloaded.Add(float64(n))
	if errors.Is(err, errNotAudited) {
		return // 503 audit_unavailable was answered instead; no byte went out
	}
	if err != nil || n != d.Length {
		s.log.LogAttrs(r.Context(), slog.LevelError, "download cut off",
			slog.String("request_id", requestID(r.Context())), slog.Int64("blob_id", id),
			slog.Int64("sent", n), slog.Int64("length", d.Length), slog.Any("error", err))
		panic(http.ErrAbortHandler)
	}
}

// parseRange reads a single-range "bytes=" header. Anything else (absent,
// malformed, several ranges) is ignored and the whole file is served, as
// RFC 9110 allows.
func parseRange(h string) *storage.ByteRange {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return nil
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return nil
	}
	if first == "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n <= 0 {
			return nil
		}
		return &storage.ByteRange{Suffix: n}
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 {
		return nil
	}
	r := &storage.ByteRange{Start: start, End: -1}
	if last != "" {
		end, err := strconv.ParseInt(last, 10, 64)
		if err != nil || end < start {
			return nil
		}
		r.End = end
	}
	return r
}

// encodeRFC5987 percent-encodes s for a filename* parameter: every byte
// outside RFC 5987's attr-char set is escaped.
func encodeRFC5987(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
