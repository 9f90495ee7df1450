package app

import (
	"bytes"
	"context"

	"github.com/carebridge/carebridge/core"
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

func (l logos) RemoveObject(ctx context.Context, container, object string) error {
	return l.storage.RemoveObject(ctx, container, object)
}

// ErrNoLogoStore is a logo given to a business core built without an object
// store (the admin CLI's).
var ErrNoLogoStore = &core.Error{Kind: core.KindUnavailable, Code: "logo_store_unavailable",
	Message: "Logos cannot be stored here: this command has no object store"}

// noLogos is the logo store of a business core without an object store: it
// refuses every logo, so nothing is stored half-way.
type noLogos struct{}

func (noLogos) Store(context.Context, business.Logo) (int64, error) { return 0, ErrNoLogoStore }
func (noLogos) Remove(context.Context, int64) error                 { return ErrNoLogoStore }
func (noLogos) RemoveObject(context.Context, string, string) error  { return ErrNoLogoStore }
