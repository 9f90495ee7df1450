package s3test_test

import (
	"context"
	"testing"

	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/s3test"
)

func TestIntegrationStart_ServesS3WithTheReturnedKeys(t *testing.T) {
	cfg := s3test.Start(t)
	st, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureContainer(t.Context(), storage.ContainerUploads); err != nil {
		t.Fatalf("EnsureContainer: %v", err)
	}
	if err := st.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}

	wrong := cfg
	wrong.SecretKey = "not-" + cfg.SecretKey
	bad, err := s3.New(context.Background(), wrong)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Ping(t.Context()); err == nil {
		t.Fatal("Ping with a wrong secret key: no error, want the server to check signatures")
	}
}

func TestIntegrationStart_RunsIndependentServers(t *testing.T) {
	a, b := s3test.Start(t), s3test.Start(t)
	if a.Endpoint == b.Endpoint || a.AccessKey == b.AccessKey {
		t.Fatalf("two servers share %s / %s", a.Endpoint, a.AccessKey)
	}
}
