package business

import (
	"context"
	"fmt"
	"strings"

	"github.com/carebridge/carebridge/core"
)

// checkLogo refuses a logo that is not an image or is too large.
func checkLogo(logo *Logo) error {
	if logo == nil {
		return nil
	}
	mt, _, _ := strings.Cut(strings.ToLower(logo.ContentType), ";")
	if !strings.HasPrefix(strings.TrimSpace(mt), "image/") {
		return ErrInvalidLogo.WithMessage("The logo must be an image (JPEG, PNG, GIF, WebP, BMP or TIFF), got %q", mt)
	}
	if logo.Size > MaxLogoBytes {
		return &core.Error{Kind: core.KindTooLarge, Code: "logo_too_large", Message: fmt.Sprintf("The logo must be at most %d bytes", MaxLogoBytes)}
	}
	return nil
}

// removeLogo deletes a logo blob that no location refers to any more. A
// failure leaves an orphan blob that its uploader can still delete.
func (s *Service) removeLogo(ctx context.Context, id int64) {
	if id == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = s.logos.Remove(ctx, id) // see above; cores do not log
}

// removeLogoObject deletes the object of a dropped logo. A failure leaves
// an object without a row, which the orphan sweeper removes.
func (s *Service) removeLogoObject(ctx context.Context, d DroppedLogo) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = s.logos.RemoveObject(ctx, d.Container, d.Object) // see above; cores do not log
}
