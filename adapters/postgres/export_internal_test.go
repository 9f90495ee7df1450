package postgres

// The audit chain's format, for the external tests (export_test.go).
var (
	AuditGenesis   = genesis
	AuditCanonical = canonical
	AuditLink      = link
)
