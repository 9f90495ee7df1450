package postgres

// The audit chain's format, for the external tests (export_test.go).
var (
	AuditGenesis   = genesis
	AuditCanonical = canonical
	AuditLink      = link
)

// LinksHooks sets the test hooks of l (nil: none): up once Run listens,
// heard after a notification has dropped its business's set, loaded after
// Links read a set and before it keeps it. Call it before Run.
func LinksHooks(l *Links, up func(), heard, loaded func(business string)) {
	l.heard, l.loaded = heard, loaded
	if up != nil {
		l.up = func(string) { up() }
	}
}

// LinksPairKey is the pair key of two records.
var LinksPairKey = pairKey
