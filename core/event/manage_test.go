package event

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// manager is a Manager over mocks: roles gives each subject's role in
// business "b1"; the store holds one enabled subscription "s1" of "b1".
func manager(roles map[string]core.Role) (*Manager, *StoreMock) {
	store := &StoreMock{
		GetFunc: func(_ context.Context, business, id string) (Subscription, error) {
			if business != "b1" || id != "s1" {
				return Subscription{}, ErrSubscriptionNotFound
			}
			return Subscription{ID: "s1", BusinessID: "b1", Enabled: true}, nil
		},
		CreateFunc: func(_ context.Context, s *Subscription) error { s.CreatedAt = time.Now(); return nil },
		RotateFunc: func(context.Context, string, string, []byte, time.Duration) error { return nil },
		ReplayFunc: func(context.Context, string, string, time.Time, time.Time) (int, error) { return 3, nil },
		DeleteFunc: func(context.Context, string, string) error { return nil },
		UpdateFunc: func(_ context.Context, _, _ string, fn func(*Subscription) error) (Subscription, error) {
			s := Subscription{ID: "s1", BusinessID: "b1", URL: "https://old.example/", Origin: ByOperator, Enabled: true}
			return s, fn(&s)
		},
	}
	secrets := &SecretsMock{NewFunc: func(id string) (string, []byte) { return "whsec_x", []byte("sealed:" + id) }}
	r := &RolesMock{RoleFunc: func(_ context.Context, business, subject string) (core.Role, error) {
		if business != "b1" {
			return "", nil
		}
		return roles[subject], nil
	}}
	return NewManager(store, secrets, r, URLPolicy{}), store
}

func as(subject string) context.Context {
	return core.WithActor(context.Background(), core.Actor{Subject: subject})
}

func TestManager_OwnersAndAdminsOnly(t *testing.T) {
	m, store := manager(map[string]core.Role{"o": core.RoleOwner, "a": core.RoleAdmin, "s": core.RoleStaff})
	for subject, want := range map[string]string{"o": "", "a": "", "s": "insufficient_role", "x": "subscription_not_found"} {
		_, err := m.Create(as(subject), NewWebhook{Business: "b1", URL: "https://hooks.example/", Types: []string{"*"}})
		var ce *core.Error
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", subject, err)
		case want != "" && (!errors.As(err, &ce) || ce.Code != want):
			t.Errorf("%s: %v, want %s", subject, err, want)
		}
	}
	if n := len(store.CreateCalls()); n != 2 {
		t.Fatalf("%d subscriptions stored, want the owner's and the admin's", n)
	}
	if s := store.CreateCalls()[0].Sub; s.Origin != ByAPI || !s.Enabled || s.BusinessID != "b1" {
		t.Errorf("stored %+v", s)
	}
	if _, err := m.Get(as("o"), "", "s1"); !errors.Is(err, ErrSubscriptionNotFound) {
		t.Errorf("no business: %v", err)
	}
}

func TestManager_ValidatesTypesAndReplayWindow(t *testing.T) {
	m, _ := manager(map[string]core.Role{"o": core.RoleOwner})
	for _, types := range [][]string{nil, {}, {"nope"}, {"*", "blob.deleted"}, {"blob.deleted,blob.uploaded"}, {""}} {
		if _, err := m.Create(as("o"), NewWebhook{Business: "b1", URL: "https://hooks.example/", Types: types}); core.KindOf(err) != core.KindInvalid {
			t.Errorf("types %q: %v", types, err)
		}
	}
	now := time.Now()
	for _, c := range []struct {
		since, until time.Time
		ok           bool
	}{
		{now.Add(-time.Hour), now, true},
		{now.Add(-ReplayWindow + time.Minute), now, true},
		{now.Add(-ReplayWindow - time.Minute), now, false},
		{now, now, false},
		{now, now.Add(-time.Second), false},
	} {
		n, err := m.Replay(as("o"), "b1", "s1", c.since, c.until)
		if c.ok != (err == nil) || (c.ok && n != 3) {
			t.Errorf("replay [%s, %s): %d, %v", c.since, c.until, n, err)
		}
	}
}

func TestManager_UpdateMakesANewURLThePractices(t *testing.T) {
	m, _ := manager(map[string]core.Role{"o": core.RoleOwner})
	u, off := "https://new.example/", false
	s, err := m.Update(as("o"), "b1", "s1", WebhookEdit{URL: &u, Enabled: &off})
	if err != nil || s.URL != u || s.Origin != ByAPI || s.Enabled || s.DisabledReason != DisabledByBusiness {
		t.Fatalf("updated %+v, %v", s, err)
	}
	on := true
	s, err = m.Update(as("o"), "b1", "s1", WebhookEdit{Enabled: &on})
	if err != nil || s.Origin != ByOperator || !s.Enabled || s.DisabledReason != "" {
		t.Fatalf("only enabled: %+v, %v", s, err)
	}
}
