package storage

import "github.com/carebridge/carebridge/core"

// The failures of the storage core, declared once.
var (
	ErrBlobNotFound         = &core.Error{Kind: core.KindNotFound, Code: "blob_not_found", Message: "Blob entry not found"}
	ErrObjectNotFound       = &core.Error{Kind: core.KindNotFound, Code: "object_not_found", Message: "Stored file not found"}
	ErrLocationNotFound     = &core.Error{Kind: core.KindNotFound, Code: "location_not_found", Message: "Business location not found"}
	ErrInvalidLocationID    = &core.Error{Kind: core.KindInvalid, Code: "invalid_business_location_id", Message: "businessLocationId must be a positive integer written in digits only (no sign, no leading zero)"}
	ErrFileMissing          = &core.Error{Kind: core.KindInvalid, Code: "file_missing", Message: "The file part is missing"}
	ErrFileTypeNotAllowed   = &core.Error{Kind: core.KindInvalid, Code: "file_type_not_allowed", Message: "File type not allowed"}
	ErrInvalidContainer     = &core.Error{Kind: core.KindInvalid, Code: "invalid_container", Message: "containerName must be one of uploads, documents, images, temp, archived"}
	ErrSizeMismatch         = &core.Error{Kind: core.KindInvalid, Code: "file_size_mismatch", Message: "fileSize does not match the bytes received"}
	ErrFileTooLarge         = &core.Error{Kind: core.KindTooLarge, Code: "file_too_large", Message: "File is larger than the maximum upload size"}
	ErrEncryptionKeyMissing = &core.Error{Kind: core.KindInvalid, Code: "encryption_key_missing", Message: "Encryption failed: CLOUD_STORAGE_ENCRYPTION_KEY is not configured"}
	ErrEncryptionKeyUnknown = &core.Error{Kind: core.KindInternal, Code: "encryption_key_unknown", Message: "The key that encrypted this file is not configured"}
	ErrBlobCorrupt          = &core.Error{Kind: core.KindInternal, Code: "blob_corrupt", Message: "Stored file failed its integrity check"}
	ErrRangeNotSatisfiable  = &core.Error{Kind: core.KindRangeNotSatisfiable, Code: "range_not_satisfiable", Message: "Requested range not satisfiable"}
	ErrMalwareDetected      = &core.Error{Kind: core.KindUnprocessable, Code: "malware_detected", Message: "The file carries malware; it was not stored"}
	ErrScannerUnavailable   = &core.Error{Kind: core.KindUnavailable, Code: "scanner_unavailable", Message: "The malware scanner is not available; nothing was stored"}
)
