package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/storage"
)

// BlobRepo keeps blob entries; it implements storage.BlobRepo.
type BlobRepo struct {
	db dbtx
}

// Blobs returns the blob-entry repository.
func (s *Store) Blobs() *BlobRepo { return &BlobRepo{db: s.pool} }

const blobColumns = `id, blob_name, container_name, original_filename, content_type, file_size,
	is_encrypted, encryption_key_id, wrapped_key, sha256, uploaded_by, business_location_id,
	practice_id, created_at, updated_at`

// blobBusiness is, in a statement on blob_entries, the business of the
// entry's location as text, empty when the entry has no location or its
// location is gone (business_location_id is text, not a reference).
// Uploads store the location id in digits only (core.ParseID); rows stored
// before that may hold "+5" or "05", which the access check reads as
// location 5, and which name its business here too. The pattern keeps the
// cast within bigint.
const blobBusiness = `coalesce((SELECT l.business_id::text FROM business_locations l WHERE l.id =
	CASE WHEN blob_entries.business_location_id ~ '^[+]?0*[0-9]{1,18}$' THEN blob_entries.business_location_id::bigint END), '')`

// Insert stores b and sets its ID, times and BusinessID, and writes the
// request's pending audit event (audit.Pending, naming b and its business)
// in the same transaction.
func (r *BlobRepo) Insert(ctx context.Context, b *storage.Blob) error {
	err := audited(ctx, r.db, func(tx pgx.Tx) (string, string, error) {
		if err := r.insert(ctx, tx, b); err != nil {
			return "", "", err
		}
		return strconv.FormatInt(b.ID, 10), b.BusinessID, nil
	})
	if err != nil {
		return fmt.Errorf("insert blob entry: %w", err)
	}
	return nil
}

func (r *BlobRepo) insert(ctx context.Context, db dbtx, b *storage.Blob) error {
	return db.QueryRow(ctx, `
		INSERT INTO blob_entries (blob_name, container_name, original_filename, content_type,
			file_size, is_encrypted, encryption_key_id, wrapped_key, sha256, uploaded_by,
			business_location_id, practice_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		RETURNING id, created_at, updated_at, `+blobBusiness,
		b.Name, string(b.Container), b.OriginalFilename, b.ContentType, b.Size, b.Encrypted,
		nullable(b.KeyID), b.WrappedKey, b.SHA256, b.UploadedBy,
		nullable(b.BusinessLocationID), nullable(b.PracticeID),
	).Scan(&b.ID, &b.CreatedAt, &b.UpdatedAt, &b.BusinessID)
}

// Known returns which of names an entry of container c names.
func (r *BlobRepo) Known(ctx context.Context, c storage.Container, names []string) (map[string]bool, error) {
	rows, _ := r.db.Query(ctx, `SELECT blob_name FROM blob_entries WHERE container_name = $1 AND blob_name = ANY($2)`, string(c), names)
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("known blob names: %w", err)
	}
	known := make(map[string]bool, len(found))
	for _, n := range found {
		known[n] = true
	}
	return known, nil
}

// SweepClaim runs fn holding the blob sweeper's claim: a transaction-scoped
// advisory lock that one instance at a time gets without waiting. It
// reports false, without running fn, when another instance holds it.
func (s *Store) SweepClaim(ctx context.Context, fn func(ctx context.Context) error) (bool, error) {
	ran := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var got bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('carebridge:blob-sweeper', 0))`).Scan(&got); err != nil {
			return fmt.Errorf("claim the blob sweeper: %w", err)
		}
		if !got {
			return nil
		}
		ran = true
		return fn(ctx)
	})
	return ran, err
}

// Get returns blob entry id, with the business of its location.
func (r *BlobRepo) Get(ctx context.Context, id int64) (storage.Blob, error) {
	b, err := scanBlob(r.db.QueryRow(ctx, `SELECT `+blobColumns+`, `+blobBusiness+` FROM blob_entries WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Blob{}, storage.ErrBlobNotFound
	}
	if err != nil {
		return storage.Blob{}, fmt.Errorf("get blob entry %d: %w", id, err)
	}
	return b, nil
}

// scanBlob reads blobColumns and blobBusiness.
func scanBlob(row pgx.Row) (storage.Blob, error) {
	var (
		b                         storage.Blob
		keyID, location, practice *string
		container                 string
	)
	err := row.Scan(&b.ID, &b.Name, &container, &b.OriginalFilename, &b.ContentType, &b.Size,
		&b.Encrypted, &keyID, &b.WrappedKey, &b.SHA256, &b.UploadedBy, &location,
		&practice, &b.CreatedAt, &b.UpdatedAt, &b.BusinessID)
	if err != nil {
		return storage.Blob{}, err
	}
	b.Container = storage.Container(container)
	b.KeyID, b.BusinessLocationID, b.PracticeID = deref(keyID), deref(location), deref(practice)
	return b, nil
}

// Delete removes blob entry id and returns it as it was, and writes the
// request's pending audit event (audit.Pending, naming the blob's
// business) in the same transaction.
func (r *BlobRepo) Delete(ctx context.Context, id int64) (storage.Blob, error) {
	var b storage.Blob
	err := audited(ctx, r.db, func(tx pgx.Tx) (string, string, error) {
		var err error
		b, err = scanBlob(tx.QueryRow(ctx, `DELETE FROM blob_entries WHERE id = $1 RETURNING `+blobColumns+`, `+blobBusiness, id))
		if err != nil {
			return "", "", err
		}
		return strconv.FormatInt(id, 10), b.BusinessID, nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Blob{}, storage.ErrBlobNotFound
	}
	if err != nil {
		return storage.Blob{}, fmt.Errorf("delete blob entry %d: %w", id, err)
	}
	return b, nil
}

// LogoRepo drops the blob entries of replaced logos within the business
// core's transaction; it implements business.LogoRepo.
type LogoRepo struct {
	db dbtx
}

// Drop deletes blob entry id and returns what it named: its object and
// the location and business it belonged to. found is false when there is
// no such entry.
func (r *LogoRepo) Drop(ctx context.Context, id int64) (business.DroppedLogo, bool, error) {
	var (
		d        business.DroppedLogo
		location *string
	)
	err := r.db.QueryRow(ctx, `DELETE FROM blob_entries WHERE id = $1
		RETURNING id, container_name, blob_name, business_location_id, `+blobBusiness, id).
		Scan(&d.BlobID, &d.Container, &d.Object, &location, &d.BusinessID)
	if errors.Is(err, pgx.ErrNoRows) {
		return business.DroppedLogo{}, false, nil
	}
	if err != nil {
		return business.DroppedLogo{}, false, fmt.Errorf("drop logo blob entry %d: %w", id, err)
	}
	d.LocationID = deref(location)
	return d, true, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
