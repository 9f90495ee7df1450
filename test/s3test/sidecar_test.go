package s3test

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/core/storage"
)

// The fallback for file systems without extended attributes must work too,
// though this machine's temporary directory has them.
func TestIntegrationStart_SidecarMetadataWorks(t *testing.T) {
	bin := os.Getenv(EnvBin)
	if bin == "" {
		missing(t)
	}
	cfg := startServer(t, bin, true)
	ctx := t.Context()
	st, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureContainer(ctx, storage.ContainerUploads); err != nil {
		t.Fatalf("EnsureContainer: %v", err)
	}
	if err := st.Put(ctx, storage.ContainerUploads, "a/b", strings.NewReader("sidecar"), 7); err != nil {
		t.Fatalf("Put: %v", err)
	}
	rc, err := st.Get(ctx, storage.ContainerUploads, "a/b", 1, 3)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || string(got) != "ide" {
		t.Fatalf("Get = %q, %v; want %q", got, err, "ide")
	}
}
