// Package ports holds the driving ports: the use cases that the HTTP
// adapter (and the CLI) call. The cores implement them; app wires them.
package ports

import (
	"context"

	"github.com/carebridge/carebridge/core/storage"
)

// Storage is the blob-storage use cases (core/storage.Service).
type Storage interface {
	Upload(ctx context.Context, in storage.UploadInput) (storage.Blob, error)
	Metadata(ctx context.Context, id int64) (storage.Blob, error)
	Download(ctx context.Context, id int64, r *storage.ByteRange) (*storage.Download, error)
	Delete(ctx context.Context, id int64) error
}

var _ Storage = (*storage.Service)(nil)
