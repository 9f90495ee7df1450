// Package storage is the blob-storage core: blob entries, containers, the
// allowed file types and the upload, download, metadata and delete use cases.
// It imports only the standard library and core.
package storage

import (
	"time"
)

// Container is one of the allowed container names.
type Container string

const (
	ContainerUploads   Container = "uploads"
	ContainerDocuments Container = "documents"
	ContainerImages    Container = "images"
	ContainerTemp      Container = "temp"
	ContainerArchived  Container = "archived"
)

// Containers lists every allowed container.
var Containers = []Container{ContainerUploads, ContainerDocuments, ContainerImages, ContainerTemp, ContainerArchived}

// ParseContainer validates a container name; "" means uploads.
func ParseContainer(s string) (Container, error) {
	if s == "" {
		return ContainerUploads, nil
	}
	for _, c := range Containers {
		if string(c) == s {
			return c, nil
		}
	}
	return "", ErrInvalidContainer
}

// Blob is one blob entry: the metadata row of a stored file.
type Blob struct {
	ID                 int64
	Name               string // object name in the store, generated
	Container          Container
	OriginalFilename   string
	ContentType        string
	Size               int64 // plaintext bytes
	Encrypted          bool
	KeyID              string // master key id; "" when not encrypted
	WrappedKey         []byte // data key sealed by the master key KeyID
	UploadedBy         string
	BusinessLocationID string // "" when absent
	BusinessID         string // the business of BusinessLocationID, read with the entry; "" when none
	PracticeID         string // "" when absent
	SHA256             string // hex digest of the plaintext
	CreatedAt          time.Time
	UpdatedAt          time.Time
}
