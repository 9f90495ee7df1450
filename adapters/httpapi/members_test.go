package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
)

func TestMembers_RequestsAndAnswers(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	m := &BusinessMock{
		MembersFunc: func(_ context.Context, id string) ([]business.Member, error) {
			return []business.Member{{BusinessID: id, Subject: "alice", Role: core.RoleOwner, CreatedAt: at}}, nil
		},
		AddMemberFunc: func(_ context.Context, id, sub string, role core.Role) (business.Member, error) {
			return business.Member{BusinessID: id, Subject: sub, Role: role, CreatedAt: at}, nil
		},
		ChangeMemberRoleFunc: func(_ context.Context, id, sub string, role core.Role) (business.Member, error) {
			return business.Member{BusinessID: id, Subject: sub, Role: role, CreatedAt: at}, nil
		},
		RemoveMemberFunc: func(context.Context, string, string) error { return nil },
	}
	s := newBusinessServer(t, m)

	w := biz(t, s, "GET", "/business/"+bizID+"/members", nil)
	var list struct {
		Message string           `json:"message"`
		Data    []memberResponse `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != 200 || list.Message != "Members fetched successfully" ||
		len(list.Data) != 1 || list.Data[0].Subject != "alice" || list.Data[0].Role != "owner" || !list.Data[0].CreatedAt.Equal(at) {
		t.Fatalf("list: %d %s", w.Code, w.Body)
	}
	if !strings.Contains(w.Body.String(), `"createdAt":"2026-01-02T02:04:05Z"`) {
		t.Errorf("createdAt not in UTC: %s", w.Body)
	}

	data := success(t, biz(t, s, "POST", "/business/"+bizID+"/members", strings.NewReader(`{"subject":"bob","role":"staff"}`)), 201, "Member added successfully")
	if data["subject"] != "bob" || data["role"] != "staff" || data["createdAt"] == nil {
		t.Errorf("added: %v", data)
	}
	if c := m.AddMemberCalls(); len(c) != 1 || c[0].BusinessID != bizID || c[0].Subject != "bob" || c[0].Role != core.RoleStaff {
		t.Errorf("core got %+v", c)
	}
	data = success(t, biz(t, s, "PATCH", "/business/"+bizID+"/members/auth0%7Cbob", strings.NewReader(`{"role":"admin"}`)), 200, "Member updated successfully")
	if data["subject"] != "auth0|bob" || data["role"] != "admin" {
		t.Errorf("updated: %v", data)
	}
	data = success(t, biz(t, s, "DELETE", "/business/"+bizID+"/members/bob", nil), 200, "Member removed successfully")
	if len(data) != 1 || data["subject"] != "bob" {
		t.Errorf("removed: %v", data)
	}
}

func TestMembers_StrictBodiesAndCoreErrors(t *testing.T) {
	m := &BusinessMock{
		AddMemberFunc: func(_ context.Context, _, sub string, role core.Role) (business.Member, error) {
			if !role.Valid() {
				return business.Member{}, core.ErrInvalidRole
			}
			return business.Member{}, business.ErrMemberExists
		},
		ChangeMemberRoleFunc: func(context.Context, string, string, core.Role) (business.Member, error) {
			return business.Member{}, core.ErrInsufficientRole
		},
		RemoveMemberFunc: func(context.Context, string, string) error { return business.ErrLastOwner },
		MembersFunc:      func(context.Context, string) ([]business.Member, error) { return nil, business.ErrBusinessNotFound },
	}
	s := newBusinessServer(t, m)
	for _, tt := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/business/" + bizID + "/members", `{"subject":"bob","role":"staff","extra":1}`, 400, "invalid_json"},
		{"POST", "/business/" + bizID + "/members", `{"subject":"bob","role":"staff","role":"owner"}`, 400, "invalid_json"},
		{"POST", "/business/" + bizID + "/members", `{"subject":"bob","role":7}`, 400, ""},
		{"POST", "/business/" + bizID + "/members", `{"subject":"bob","role":"superuser"}`, 400, "invalid_role"},
		{"POST", "/business/" + bizID + "/members", `{"subject":"bob","role":"staff"}`, 409, "member_exists"},
		{"PATCH", "/business/" + bizID + "/members/bob", `{"role":"admin"}`, 403, "insufficient_role"},
		{"DELETE", "/business/" + bizID + "/members/alice", ``, 409, "last_owner"},
		{"GET", "/business/" + bizID + "/members", ``, 404, "business_not_found"},
	} {
		w := biz(t, s, tt.method, tt.path, strings.NewReader(tt.body))
		e := errEnvelope(t, w)
		if w.Code != tt.status || (tt.code != "" && e.Code != tt.code) {
			t.Errorf("%s %s %s: %d %s, want %d %s", tt.method, tt.path, tt.body, w.Code, e.Code, tt.status, tt.code)
		}
	}
	if n := len(m.AddMemberCalls()); n != 2 {
		t.Errorf("%d bodies reached the core, want the 2 well-formed ones", n)
	}
}
