package core

import "strings"

// Scope is one OAuth2 scope in SMART on FHIR v2 syntax,
// context/Resource.perms: context patient, user or system; Resource a FHIR
// type or "*"; Perms a subset of "cruds" (create, read, update, delete,
// search), kept in that order.
type Scope struct {
	Context  string
	Resource string
	Perms    string
}

// Scope contexts.
const (
	ContextPatient = "patient"
	ContextUser    = "user"
	ContextSystem  = "system"
)

// Permissions, one letter each, as SMART v2 writes them.
const (
	PermCreate = 'c'
	PermRead   = 'r'
	PermUpdate = 'u'
	PermDelete = 'd'
	PermSearch = 's'
)

// String is the scope in v2 syntax, such as "user/Patient.rs".
func (s Scope) String() string { return s.Context + "/" + s.Resource + "." + s.Perms }

// v1 suffixes and what they mean in v2.
var v1Perms = map[string]string{"read": "rs", "write": "cud", "*": "cruds"}

// ParseScope reads one scope; ok is false for anything that is not a SMART
// scope (openid, fhirUser, launch/patient, a malformed one...).
func ParseScope(raw string) (Scope, bool) {
	ctx, rest, ok := strings.Cut(raw, "/")
	if !ok || (ctx != ContextPatient && ctx != ContextUser && ctx != ContextSystem) {
		return Scope{}, false
	}
	// The resource is a FHIR type name or *; the permissions follow the
	// last dot (v2 may add ?query parameters, which narrow a scope: such a
	// scope is not taken as the unnarrowed one).
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return Scope{}, false
	}
	res, perms := rest[:i], rest[i+1:]
	if !validResource(res) {
		return Scope{}, false
	}
	if v2, ok := v1Perms[perms]; ok {
		perms = v2
	} else if !validPerms(perms) {
		return Scope{}, false
	}
	return Scope{Context: ctx, Resource: res, Perms: perms}, true
}

func validResource(s string) bool {
	if s == "*" {
		return true
	}
	if s == "" || len(s) > 64 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// validPerms accepts a non-empty subsequence of "cruds", in that order.
func validPerms(p string) bool {
	if p == "" {
		return false
	}
	const all = "cruds"
	j := 0
	for i := 0; i < len(p); i++ {
		k := strings.IndexByte(all[j:], p[i])
		if k < 0 {
			return false
		}
		j += k + 1
	}
	return true
}

// ParseScopes reads every scope of the given claim values (each a
// space-separated list); what is not a SMART scope is ignored.
func ParseScopes(values ...string) []Scope {
	var out []Scope
	for _, v := range values {
		for _, f := range strings.Fields(v) {
			if s, ok := ParseScope(f); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// Allows reports whether one of scopes grants perm on resource in context.
func Allows(scopes []Scope, context, resource string, perm byte) bool {
	for _, s := range scopes {
		if s.Context == context && (s.Resource == resource || s.Resource == "*") && strings.IndexByte(s.Perms, perm) >= 0 {
			return true
		}
	}
	return false
}

// ErrInsufficientScope is the failure of a caller whose token lacks the
// scope an operation needs; Scope names one that would do.
var ErrInsufficientScope = &Error{Kind: KindForbidden, Code: "insufficient_scope", Message: "The token's scopes do not allow this operation"}

// InsufficientScope returns ErrInsufficientScope naming scope.
func InsufficientScope(scope string) *Error {
	e := ErrInsufficientScope.WithMessage("The token's scopes do not allow this operation; it needs %s", scope)
	e.Scope = scope
	return e
}
