package core

import "testing"

func TestRole_ExactlyThreeRolesAndOnlyOwnerAndAdminManage(t *testing.T) {
	for _, tt := range []struct {
		role           Role
		valid, manages bool
	}{
		{RoleOwner, true, true},
		{RoleAdmin, true, true},
		{RoleStaff, true, false},
		{"Owner", false, false},
		{"", false, false},
		{"superuser", false, false},
	} {
		if got := tt.role.Valid(); got != tt.valid {
			t.Errorf("Role(%q).Valid() = %v, want %v", tt.role, got, tt.valid)
		}
		if got := tt.role.Manages(); got != tt.manages {
			t.Errorf("Role(%q).Manages() = %v, want %v", tt.role, got, tt.manages)
		}
	}
}
