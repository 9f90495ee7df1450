package app

import (
	"bytes"
	"context"

	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/storage"
)

// logos lets the business core keep location logos through the storage
// core, as blob entries in container images.
type logos struct {
	storage *storage.Service
}

func (l logos) Store(ctx context.Context, logo business.Logo) (int64, error) {
	b, err := l.storage.Upload(ctx, storage.UploadInput{
		OriginalFilename: logo.Filename,
		ContentType:      logo.ContentType,
		FileSize:         logo.Size,
		Container:        string(storage.ContainerImages),
		Body:             bytes.NewReader(logo.Body),
	})
	return b.ID, err
}

func (l logos) Remove(ctx context.Context, blobID int64) error {
	return l.storage.Delete(ctx, blobID)
}
