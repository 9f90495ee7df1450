package core

// Role is a member's role in a business (a practice). The business and
// storage cores decide what each role may do.
type Role string

// The roles a member may have; there are no others.
const (
	RoleOwner Role = "owner"
	RoleAdmin Role = "admin"
	RoleStaff Role = "staff"
)

// Valid reports whether r is one of the three roles (case-sensitive).
func (r Role) Valid() bool { return r == RoleOwner || r == RoleAdmin || r == RoleStaff }

// Manages reports whether r may change a business and what belongs to it:
// its locations, providers, hours and files (owner and admin).
func (r Role) Manages() bool { return r == RoleOwner || r == RoleAdmin }

// ErrInsufficientRole is a member whose role does not allow the operation.
var ErrInsufficientRole = &Error{Kind: KindForbidden, Code: "insufficient_role", Message: "Your role in this business does not allow this"}

// ErrInvalidRole is a role that is not owner, admin or staff.
var ErrInvalidRole = &Error{Kind: KindInvalid, Code: "invalid_role", Message: "role must be one of owner, admin, staff"}
