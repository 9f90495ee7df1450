package business

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/carebridge/carebridge/core"
)

// Member is a subject with a role in a business.
type Member struct {
	BusinessID string
	Subject    string
	Role       core.Role
	CreatedAt  time.Time
}

// The failures of the members use cases.
var (
	ErrMemberNotFound = &core.Error{Kind: core.KindNotFound, Code: "member_not_found", Message: "Member not found"}
	ErrMemberExists   = &core.Error{Kind: core.KindConflict, Code: "member_exists", Message: "The subject is already a member of the business"}
	ErrLastOwner      = &core.Error{Kind: core.KindConflict, Code: "last_owner", Message: "A business must keep at least one owner"}
)

// maxSubjectBytes bounds a member's subject (a token's sub).
const maxSubjectBytes = 255

// memberOp is a change to a business's members.
type memberOp int

const (
	opAddMember memberOp = iota
	opChangeRole
	opRemoveMember
)

// mayChangeMember is the role rule of member changes: whether a member
// with role actor may apply op to a member whose role is target (for an
// addition, the role given). An owner may do anything; an admin may add
// and remove staff; nobody else changes members.
func mayChangeMember(actor core.Role, op memberOp, target core.Role) bool {
	switch {
	case actor == core.RoleOwner:
		return true
	case actor == core.RoleAdmin:
		return (op == opAddMember || op == opRemoveMember) && target == core.RoleStaff
	default:
		return false
	}
}

// leavesNoOwner reports whether giving subject the role to ("" removes
// it) would leave members without an owner.
func leavesNoOwner(members []Member, subject string, to core.Role) bool {
	owners := 0
	for _, m := range members {
		role := m.Role
		if m.Subject == subject {
			role = to
		}
		if role == core.RoleOwner {
			owners++
		}
	}
	return owners == 0
}

// find returns the member with subject.
func find(members []Member, subject string) (Member, bool) {
	for _, m := range members {
		if m.Subject == subject {
			return m, true
		}
	}
	return Member{}, false
}

// checkSubject validates a subject given for a new member.
func checkSubject(subject string) error {
	switch {
	case subject == "":
		return ErrInvalid.WithMessage("Validation failed: subject is required")
	case len(subject) > maxSubjectBytes:
		return ErrInvalid.WithMessage("Validation failed: subject must be at most %d bytes", maxSubjectBytes)
	case !utf8.ValidString(subject) || strings.IndexFunc(subject, unicode.IsControl) >= 0:
		return ErrInvalid.WithMessage("Validation failed: subject must be UTF-8 text without control characters")
	}
	return nil
}

func checkRole(role core.Role) error {
	if !role.Valid() {
		return core.ErrInvalidRole.WithMessage("Validation failed: role must be one of owner, admin, staff, got %q", role)
	}
	return nil
}

// caller returns the actor and business id (lower case) of a members use
// case; a malformed id is refused before anything is read.
func caller(ctx context.Context, businessID string) (core.Actor, string, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return core.Actor{}, "", core.ErrUnauthenticated
	}
	if !core.IsUUID(businessID) {
		return core.Actor{}, "", ErrInvalidBusinessID
	}
	return actor, strings.ToLower(businessID), nil
}

// actorRole is the caller's role among members; a caller who is not one
// is told the business does not exist.
func actorRole(members []Member, actor core.Actor) (core.Role, error) {
	m, ok := find(members, actor.Subject)
	if !ok {
		return "", ErrBusinessNotFound
	}
	return m.Role, nil
}

// Members returns the members of business id, to any of its members.
func (s *Service) Members(ctx context.Context, businessID string) ([]Member, error) {
	actor, id, err := caller(ctx, businessID)
	if err != nil {
		return nil, err
	}
	ms, err := s.members.List(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, err := actorRole(ms, actor); err != nil {
		return nil, err
	}
	return ms, nil
}

// AddMember makes subject a member of business id with role: an owner may
// add any role, an admin only staff.
func (s *Service) AddMember(ctx context.Context, businessID, subject string, role core.Role) (Member, error) {
	actor, id, err := caller(ctx, businessID)
	if err != nil {
		return Member{}, err
	}
	m := Member{BusinessID: id, Subject: strings.TrimSpace(subject), Role: role}
	err = s.members.Add(ctx, &m, func(ms []Member) error {
		by, err := actorRole(ms, actor)
		if err != nil {
			return err
		}
		if err := checkSubject(m.Subject); err != nil {
			return err
		}
		if err := checkRole(role); err != nil {
			return err
		}
		if !mayChangeMember(by, opAddMember, role) {
			return core.ErrInsufficientRole.WithMessage("Your role (%s) may not add a member with role %s", by, role)
		}
		if _, ok := find(ms, m.Subject); ok {
			return ErrMemberExists
		}
		return nil
	})
	if err != nil {
		return Member{}, err
	}
	return m, nil
}

// ChangeMemberRole gives member subject of business id the role (owners
// only); demoting the last owner is refused.
func (s *Service) ChangeMemberRole(ctx context.Context, businessID, subject string, role core.Role) (Member, error) {
	actor, id, err := caller(ctx, businessID)
	if err != nil {
		return Member{}, err
	}
	return s.members.SetRole(ctx, id, subject, role, func(ms []Member) error {
		by, err := actorRole(ms, actor)
		if err != nil {
			return err
		}
		if err := checkRole(role); err != nil {
			return err
		}
		target, ok := find(ms, subject)
		if !mayChangeMember(by, opChangeRole, target.Role) {
			return core.ErrInsufficientRole.WithMessage("Only an owner may change a member's role")
		}
		if !ok {
			return ErrMemberNotFound
		}
		if leavesNoOwner(ms, subject, role) {
			return ErrLastOwner
		}
		return nil
	})
}

// RemoveMember removes member subject from business id: owners may remove
// anyone, an admin only staff; removing the last owner is refused.
func (s *Service) RemoveMember(ctx context.Context, businessID, subject string) error {
	actor, id, err := caller(ctx, businessID)
	if err != nil {
		return err
	}
	return s.members.Remove(ctx, id, subject, func(ms []Member) error {
		by, err := actorRole(ms, actor)
		if err != nil {
			return err
		}
		target, ok := find(ms, subject)
		if !ok && !by.Manages() {
			return core.ErrInsufficientRole.WithMessage("Your role (%s) may not remove members", by)
		}
		if !ok {
			return ErrMemberNotFound
		}
		if !mayChangeMember(by, opRemoveMember, target.Role) {
			return core.ErrInsufficientRole.WithMessage("Your role (%s) may not remove a member with role %s", by, target.Role)
		}
		if leavesNoOwner(ms, subject, "") {
			return ErrLastOwner
		}
		return nil
	})
}

// CreateMember makes subject a member of business id with role (admin
// CLI: no caller, no role rule).
func (s *Service) CreateMember(ctx context.Context, businessID, subject string, role core.Role) (Member, error) {
	if !core.IsUUID(businessID) {
		return Member{}, ErrInvalidBusinessID
	}
	m := Member{BusinessID: strings.ToLower(businessID), Subject: strings.TrimSpace(subject), Role: role}
	if err := checkSubject(m.Subject); err != nil {
		return Member{}, err
	}
	if err := checkRole(role); err != nil {
		return Member{}, err
	}
	err := s.members.Add(ctx, &m, func(ms []Member) error {
		if _, ok := find(ms, m.Subject); ok {
			return ErrMemberExists
		}
		return nil
	})
	if err != nil {
		return Member{}, err
	}
	return m, nil
}
