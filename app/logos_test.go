package app

import (
	"context"
	"errors"
	"testing"

	"github.com/carebridge/carebridge/core/business"
)

func TestNoLogos_RefusesEveryLogoWithAClearError(t *testing.T) {
	if id, err := (noLogos{}).Store(context.Background(), business.Logo{Filename: "logo.png"}); id != 0 || !errors.Is(err, ErrNoLogoStore) {
		t.Errorf("Store = %d, %v; want 0, ErrNoLogoStore", id, err)
	}
	if err := (noLogos{}).Remove(context.Background(), 1); !errors.Is(err, ErrNoLogoStore) {
		t.Errorf("Remove = %v, want ErrNoLogoStore", err)
	}
	if err := (noLogos{}).RemoveObject(context.Background(), "images", "x"); !errors.Is(err, ErrNoLogoStore) {
		t.Errorf("RemoveObject = %v, want ErrNoLogoStore", err)
	}
}
