package business

import (
	"context"
	"errors"
	"testing"

	"github.com/carebridge/carebridge/core"
)

func TestMayChangeMember_RoleRule(t *testing.T) {
	const (
		owner = core.RoleOwner
		admin = core.RoleAdmin
		staff = core.RoleStaff
	)
	for _, tt := range []struct {
		actor  core.Role
		op     memberOp
		target core.Role
		want   bool
	}{
		{owner, opAddMember, owner, true},
		{owner, opAddMember, admin, true},
		{owner, opAddMember, staff, true},
		{admin, opAddMember, owner, false},
		{admin, opAddMember, admin, false},
		{admin, opAddMember, staff, true},
		{staff, opAddMember, staff, false},
		{owner, opChangeRole, owner, true},
		{owner, opChangeRole, staff, true},
		{admin, opChangeRole, staff, false},
		{staff, opChangeRole, staff, false},
		{owner, opRemoveMember, owner, true},
		{owner, opRemoveMember, admin, true},
		{admin, opRemoveMember, staff, true},
		{admin, opRemoveMember, admin, false},
		{admin, opRemoveMember, owner, false},
		{staff, opRemoveMember, staff, false},
		{"", opAddMember, staff, false},
	} {
		if got := mayChangeMember(tt.actor, tt.op, tt.target); got != tt.want {
			t.Errorf("mayChangeMember(%q, %d, %q) = %v, want %v", tt.actor, tt.op, tt.target, got, tt.want)
		}
	}
}

func TestLeavesNoOwner(t *testing.T) {
	one := []Member{{Subject: "a", Role: core.RoleOwner}, {Subject: "b", Role: core.RoleStaff}}
	two := append([]Member{{Subject: "c", Role: core.RoleOwner}}, one...)
	for _, tt := range []struct {
		name    string
		members []Member
		subject string
		to      core.Role
		want    bool
	}{
		{"removing the only owner", one, "a", "", true},
		{"demoting the only owner", one, "a", core.RoleAdmin, true},
		{"keeping the only owner an owner", one, "a", core.RoleOwner, false},
		{"removing staff", one, "b", "", false},
		{"removing one of two owners", two, "a", "", false},
		{"demoting one of two owners", two, "c", core.RoleStaff, false},
	} {
		if got := leavesNoOwner(tt.members, tt.subject, tt.to); got != tt.want {
			t.Errorf("%s: leavesNoOwner = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMembers_AnyMemberListsAndOthersSeeNoBusiness(t *testing.T) {
	for _, sub := range []string{ownerSub, adminSub, staffSub} {
		f := newFixture(t)
		ms, err := f.svc.Members(as(sub), ownBizID)
		noErr(t, err)
		if len(ms) != 3 || ms[0].Subject != ownerSub || ms[0].Role != core.RoleOwner {
			t.Errorf("%s: members = %+v, want the three, owner first", sub, ms)
		}
	}
	f := newFixture(t)
	_, err := f.svc.Members(as(strangerSub), ownBizID)
	wantErr(t, err, ErrBusinessNotFound)
	_, err = f.svc.Members(as(ownerSub), "not-a-uuid")
	wantErr(t, err, ErrInvalidBusinessID)
}

// memberCall is one member change by sub, with its expected outcome.
type memberCall struct {
	name string
	sub  string
	call func(ctx context.Context, s *Service) error
	want error // nil: it succeeds
}

func add(subject string, role core.Role) func(context.Context, *Service) error {
	return func(ctx context.Context, s *Service) error {
		_, err := s.AddMember(ctx, ownBizID, subject, role)
		return err
	}
}

func setRole(subject string, role core.Role) func(context.Context, *Service) error {
	return func(ctx context.Context, s *Service) error {
		_, err := s.ChangeMemberRole(ctx, ownBizID, subject, role)
		return err
	}
}

func remove(subject string) func(context.Context, *Service) error {
	return func(ctx context.Context, s *Service) error { return s.RemoveMember(ctx, ownBizID, subject) }
}

func TestMemberChanges_FollowTheRoleRules(t *testing.T) {
	for _, tt := range []memberCall{
		{"owner adds an owner", ownerSub, add("new", core.RoleOwner), nil},
		{"owner adds an admin", ownerSub, add("new", core.RoleAdmin), nil},
		{"admin adds staff", adminSub, add("new", core.RoleStaff), nil},
		{"admin adds an admin", adminSub, add("new", core.RoleAdmin), core.ErrInsufficientRole},
		{"admin adds an owner", adminSub, add("new", core.RoleOwner), core.ErrInsufficientRole},
		{"staff adds staff", staffSub, add("new", core.RoleStaff), core.ErrInsufficientRole},
		{"stranger adds", strangerSub, add("new", core.RoleStaff), ErrBusinessNotFound},
		{"owner adds an existing member", ownerSub, add(staffSub, core.RoleAdmin), ErrMemberExists},
		{"owner adds an unknown role", ownerSub, add("new", "superuser"), core.ErrInvalidRole},
		{"owner adds a capitalised role", ownerSub, add("new", "Owner"), core.ErrInvalidRole},
		{"owner adds an empty subject", ownerSub, add("  ", core.RoleStaff), ErrInvalid},
		{"owner promotes staff", ownerSub, setRole(staffSub, core.RoleAdmin), nil},
		{"owner demotes an admin", ownerSub, setRole(adminSub, core.RoleStaff), nil},
		{"owner demotes itself, the last owner", ownerSub, setRole(ownerSub, core.RoleAdmin), ErrLastOwner},
		{"owner changes a missing member", ownerSub, setRole("nobody", core.RoleStaff), ErrMemberNotFound},
		{"owner sets an unknown role", ownerSub, setRole(staffSub, "root"), core.ErrInvalidRole},
		{"admin changes staff", adminSub, setRole(staffSub, core.RoleAdmin), core.ErrInsufficientRole},
		{"staff changes itself", staffSub, setRole(staffSub, core.RoleOwner), core.ErrInsufficientRole},
		{"stranger changes", strangerSub, setRole(staffSub, core.RoleAdmin), ErrBusinessNotFound},
		{"owner removes an admin", ownerSub, remove(adminSub), nil},
		{"owner removes itself, the last owner", ownerSub, remove(ownerSub), ErrLastOwner},
		{"owner removes a missing member", ownerSub, remove("nobody"), ErrMemberNotFound},
		{"admin removes staff", adminSub, remove(staffSub), nil},
		{"admin removes the owner", adminSub, remove(ownerSub), core.ErrInsufficientRole},
		{"admin removes itself", adminSub, remove(adminSub), core.ErrInsufficientRole},
		{"staff removes itself", staffSub, remove(staffSub), core.ErrInsufficientRole},
		{"staff removes a missing member", staffSub, remove("nobody"), core.ErrInsufficientRole},
		{"stranger removes", strangerSub, remove(staffSub), ErrBusinessNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			before := len(f.mems[ownBizID])
			err := tt.call(as(tt.sub), f.svc)
			if tt.want == nil {
				noErr(t, err)
				return
			}
			wantErr(t, err, tt.want)
			if len(f.mems[ownBizID]) != before {
				t.Errorf("members changed from %d to %d on a refused change", before, len(f.mems[ownBizID]))
			}
		})
	}
}

func TestMemberChanges_LastOwnerRuleCountsOwnersNotMembers(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.AddMember(as(ownerSub), ownBizID, "second-owner", core.RoleOwner)
	noErr(t, err)
	m, err := f.svc.ChangeMemberRole(as("second-owner"), ownBizID, ownerSub, core.RoleStaff)
	noErr(t, err)
	if m.Role != core.RoleStaff || m.Subject != ownerSub {
		t.Errorf("member = %+v, want the first owner now staff", m)
	}
	err = f.svc.RemoveMember(as("second-owner"), ownBizID, "second-owner")
	wantErr(t, err, ErrLastOwner)
	if core.KindOf(err) != core.KindConflict {
		t.Errorf("kind = %v, want KindConflict", core.KindOf(err))
	}
}

func TestAddMember_ReturnsTheStoredMember(t *testing.T) {
	f := newFixture(t)
	m, err := f.svc.AddMember(as(ownerSub), "0B7E4D2A-6F1C-4C1E-9A55-3F2D1C0E9B01", " new-sub ", core.RoleAdmin)
	noErr(t, err)
	if m.BusinessID != ownBizID || m.Subject != "new-sub" || m.Role != core.RoleAdmin || m.CreatedAt.IsZero() {
		t.Errorf("member = %+v, want the trimmed subject in the lower-case business, with a time", m)
	}
}

func TestCreateMember_NeedsNoCallerButAValidRoleAndANewSubject(t *testing.T) {
	f := newFixture(t)
	m, err := f.svc.CreateMember(context.Background(), ownBizID, "cli-sub", core.RoleOwner)
	noErr(t, err)
	if m.Role != core.RoleOwner || m.Subject != "cli-sub" {
		t.Errorf("member = %+v", m)
	}
	_, err = f.svc.CreateMember(context.Background(), ownBizID, "cli-sub", core.RoleStaff)
	wantErr(t, err, ErrMemberExists)
	_, err = f.svc.CreateMember(context.Background(), ownBizID, "other", "boss")
	wantErr(t, err, core.ErrInvalidRole)
	_, err = f.svc.CreateMember(context.Background(), "11111111-2222-4333-8444-555555555555", "other", core.RoleStaff)
	wantErr(t, err, ErrBusinessNotFound)
}

func TestMemberChanges_ARepositoryFailureIsReturned(t *testing.T) {
	f := newFixture(t)
	f.members.ListFunc = func(context.Context, string) ([]Member, error) { return nil, errBoom }
	if _, err := f.svc.Members(as(ownerSub), ownBizID); !errors.Is(err, errBoom) {
		t.Errorf("err = %v, want the repository's", err)
	}
}
