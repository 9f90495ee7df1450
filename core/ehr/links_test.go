package ehr

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/core"
)

// memLinks is a LinkStore in memory, enough for the use case's rules.
type memLinks struct{ put []PersonLink }

func (m *memLinks) Put(_ context.Context, l PersonLink) (PersonLink, error) {
	m.put = append(m.put, l)
	return l, nil
}
func (m *memLinks) List(context.Context, string, PageRequest) ([]PersonLink, int, error) {
	return nil, 0, nil
}
func (m *memLinks) Delete(_ context.Context, business, id string) (PersonLink, error) {
	return PersonLink{ID: id, Business: business}, nil
}
func (m *memLinks) Links(context.Context, string) (*LinkSet, error) { return nil, nil }

func TestLinks_CreateChecksTheDecisionAndTheRecords(t *testing.T) {
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	systems := multi{a: {Name: "clinic-a"}, b: {Name: "clinic-b"}}
	rec := func(source, id string) SourceRef { return SourceRef{Source: source, PatientID: id} }
	member := core.WithActor(context.Background(), core.Actor{Subject: "alice", Scopes: core.ParseScopes("user/Patient.cruds")})
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		req     LinkRequest
		invalid bool
		err     error
	}{
		{"a decision on two records", member, LinkRequest{a, "same", []SourceRef{rec("clinic-a", "1"), rec("clinic-a", "2")}}, false, nil},
		{"unknown decision", member, LinkRequest{a, "maybe", []SourceRef{rec("clinic-a", "1"), rec("clinic-a", "2")}}, true, nil},
		{"one record", member, LinkRequest{a, "same", []SourceRef{rec("clinic-a", "1")}}, true, nil},
		{"three records", member, LinkRequest{a, "same", []SourceRef{rec("clinic-a", "1"), rec("clinic-a", "2"), rec("clinic-a", "3")}}, true, nil},
		{"the same record twice", member, LinkRequest{a, "different", []SourceRef{rec("clinic-a", "1"), rec("clinic-a", "1")}}, true, nil},
		{"another business's system", member, LinkRequest{a, "same", []SourceRef{rec("clinic-a", "1"), rec("clinic-b", "1")}}, true, nil},
		{"an empty patient id", member, LinkRequest{a, "same", []SourceRef{rec("clinic-a", ""), rec("clinic-a", "1")}}, true, nil},
		{"a patient id with a space", member, LinkRequest{a, "same", []SourceRef{rec("clinic-a", "1 2"), rec("clinic-a", "1")}}, true, nil},
		{"a patient id too long", member, LinkRequest{a, "same", []SourceRef{rec("clinic-a", strings.Repeat("x", 257)), rec("clinic-a", "1")}}, true, nil},
		{"no acting business", member, LinkRequest{"", "same", []SourceRef{rec("clinic-a", "1"), rec("clinic-a", "2")}}, false, ErrBusinessRequired},
		{"read-only scopes", caller("alice"), LinkRequest{a, "same", []SourceRef{rec("clinic-a", "1"), rec("clinic-a", "2")}}, false, core.ErrInsufficientScope},
		{"patient scopes", core.WithActor(context.Background(), core.Actor{Subject: "p", Scopes: core.ParseScopes("patient/*.cruds")}),
			LinkRequest{a, "same", []SourceRef{rec("clinic-a", "1"), rec("clinic-a", "2")}}, false, core.ErrInsufficientScope},
		{"no caller", context.Background(), LinkRequest{a, "same", []SourceRef{rec("clinic-a", "1"), rec("clinic-a", "2")}}, false, core.ErrUnauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memLinks{}
			l, err := NewLinks(systems, store).Create(tc.ctx, tc.req)
			switch {
			case tc.invalid:
				if !errors.Is(err, ErrInvalidLink) || len(store.put) != 0 {
					t.Fatalf("%v, stored %d; want invalid_link", err, len(store.put))
				}
			case tc.err != nil:
				if !errors.Is(err, tc.err) || len(store.put) != 0 {
					t.Fatalf("%v; want %v", err, tc.err)
				}
			default:
				if err != nil || len(store.put) != 1 || !core.IsUUID(l.ID) || l.CreatedBy != "alice" || l.Business != a ||
					l.Decision != Same || l.Records[1] != rec("clinic-a", "2") {
					t.Fatalf("%+v %v", l, err)
				}
			}
		})
	}
}

func TestLinks_ListAndDeleteCheckTheirInputs(t *testing.T) {
	const a = "aaaaaaaa-0000-0000-0000-000000000001"
	member := core.WithActor(context.Background(), core.Actor{Subject: "alice", Scopes: core.ParseScopes("system/Patient.u")})
	l := NewLinks(multi{}, &memLinks{})
	if p, err := l.List(member, a, PageRequest{}); err != nil || p.Page != 1 || p.Limit != DefaultLimit || p.Items == nil {
		t.Fatalf("defaults: %+v %v", p, err)
	}
	for _, p := range []PageRequest{{Page: -1}, {Limit: MaxLimit + 1}, {Page: MaxPage + 1}} {
		if _, err := l.List(member, a, p); !errors.Is(err, ErrInvalidLink) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	if _, err := l.Delete(member, a, "not-a-uuid"); !errors.Is(err, ErrLinkNotFound) {
		t.Fatalf("delete of a non-UUID: %v", err)
	}
	if got, err := l.Delete(member, a, "0B6F0B9E-7C1A-4A57-9A44-0D1D1B8E0A01"); err != nil || got.ID != "0b6f0b9e-7c1a-4a57-9a44-0d1d1b8e0a01" {
		t.Fatalf("delete: %+v %v", got, err)
	}
	if _, err := l.Delete(caller("alice"), a, "0b6f0b9e-7c1a-4a57-9a44-0d1d1b8e0a01"); !errors.Is(err, core.ErrInsufficientScope) {
		t.Fatalf("delete without u: %v", err)
	}
}
