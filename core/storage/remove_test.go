package storage

import (
	"context"
	"testing"
)

// RemoveObject deletes an object no entry names (a replaced logo's, whose
// row went with the replacement), whoever uploaded it; one an entry still
// names is kept.
func TestRemoveObject_OnlyAnObjectNoEntryNames(t *testing.T) {
	f := newFixture(t)
	f.data["images/named"], f.data["images/dropped"] = []byte("a"), []byte("b")
	f.blobs.KnownFunc = func(_ context.Context, c Container, names []string) (map[string]bool, error) {
		return map[string]bool{"named": c == ContainerImages && names[0] == "named"}, nil
	}
	if err := f.svc.RemoveObject(context.Background(), "images", "dropped"); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.RemoveObject(context.Background(), "images", "named"); err == nil {
		t.Fatal("an object an entry names was removed")
	}
	for _, bad := range [][2]string{{"secrets", "dropped"}, {"images", ""}} {
		if err := f.svc.RemoveObject(context.Background(), bad[0], bad[1]); err == nil {
			t.Errorf("RemoveObject(%q, %q) did not fail", bad[0], bad[1])
		}
	}
	if _, ok := f.data["images/dropped"]; ok {
		t.Fatal("the dropped object is still there")
	}
	if _, ok := f.data["images/named"]; !ok {
		t.Fatal("the named object went")
	}
}
