package event

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core"
)

// Webhooks a practice manages itself (the contract's section of that
// name): an owner or admin of the acting business makes, changes and
// removes its subscriptions, reads their delivery log, retries, replays
// and tests. Every subscription is one kind whoever made it: the admin
// CLI's with --business are the business's too.

// Management limits of the contract.
const (
	// RotationOverlap is how long the secret a rotation replaced still
	// signs deliveries, beside the new one.
	RotationOverlap = 24 * time.Hour
	// ReplayWindow is how far back a replay may reach (the outbox keeps
	// events this long).
	ReplayWindow = 7 * 24 * time.Hour
	// MaxDescription bounds a subscription's description.
	MaxDescription = 500
)

// Paging of every listing, as the other listings of the service.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	MaxPage      = 10000
)

// PageRequest is a page of a listing: Page from 1, Limit its size; zero
// is the default (page 1, DefaultLimit).
type PageRequest struct{ Page, Limit int }

// Page is one page of a listing.
type Page[T any] struct {
	Items       []T
	TotalCount  int
	Page, Limit int
}

func (p PageRequest) normal() (PageRequest, error) {
	if p.Page == 0 {
		p.Page = 1
	}
	if p.Limit == 0 {
		p.Limit = DefaultLimit
	}
	if p.Page < 1 || p.Page > MaxPage {
		return p, ErrInvalidWebhook.WithMessage("Validation failed: page must be between 1 and %d", MaxPage)
	}
	if p.Limit < 1 || p.Limit > MaxLimit {
		return p, ErrInvalidWebhook.WithMessage("Validation failed: limit must be between 1 and %d", MaxLimit)
	}
	return p, nil
}

// NewWebhook is a subscription a practice asks for, as the edge parsed it.
type NewWebhook struct {
	Business    string // the acting business
	URL         string
	Types       []string
	Description string
}

// WebhookEdit is a PATCH: nil fields stay as they are.
type WebhookEdit struct {
	URL         *string
	Types       []string // nil: unchanged
	Description *string
	Enabled     *bool
}

// Created is a new subscription and its secret's text, shown once.
type Created struct {
	Subscription
	SecretText string
}

// Manager is the use case of the webhooks a practice manages.
type Manager struct {
	store   Store
	secrets Secrets
	roles   Roles
	policy  URLPolicy
	now     func() time.Time
}

// NewManager returns the use case over store, making secrets with
// secrets, asking roles who may, and checking URLs with policy.
func NewManager(store Store, secrets Secrets, roles Roles, policy URLPolicy) *Manager {
	return &Manager{store: store, secrets: secrets, roles: roles, policy: policy, now: time.Now}
}

// authorize lets an owner or admin of business through: a staff member is
// core.ErrInsufficientRole; no business or a non-member (the edge resolved
// the acting business, so only a race) is ErrSubscriptionNotFound.
func (m *Manager) authorize(ctx context.Context, business string) error {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return core.ErrUnauthenticated
	}
	if business == "" {
		return ErrSubscriptionNotFound
	}
	role, err := m.roles.Role(ctx, business, actor.Subject)
	if err != nil {
		return fmt.Errorf("read role: %w", err)
	}
	switch {
	case role == "":
		return ErrSubscriptionNotFound
	case !role.Manages():
		return core.ErrInsufficientRole.WithMessage("Only an owner or admin may manage the business's webhooks")
	}
	return nil
}

// checkTypes validates a list of event types: non-empty, known, or ["*"].
func checkTypes(types []string) ([]string, error) {
	if len(types) == 0 {
		return nil, ErrInvalidWebhook.WithMessage("Validation failed: events must list at least one event type, or \"*\"")
	}
	if slices.Contains(types, All) {
		if len(types) > 1 {
			return nil, ErrUnknownType.WithMessage("\"*\" stands alone: it already selects every event type")
		}
		return []string{All}, nil
	}
	for _, t := range types {
		if strings.Contains(t, ",") || strings.TrimSpace(t) != t || t == "" {
			return nil, ErrUnknownType.WithMessage("Unknown event type %q", t)
		}
	}
	return ParseTypes(strings.Join(types, ","))
}

func checkDescription(d string) error {
	if len([]rune(d)) > MaxDescription {
		return ErrInvalidWebhook.WithMessage("Validation failed: description is longer than %d characters", MaxDescription)
	}
	return nil
}

// Create makes a subscription of the acting business, enabled, with a
// fresh secret.
func (m *Manager) Create(ctx context.Context, in NewWebhook) (Created, error) {
	if err := m.authorize(ctx, in.Business); err != nil {
		return Created{}, err
	}
	types, err := checkTypes(in.Types)
	if err != nil {
		return Created{}, err
	}
	if err := checkDescription(in.Description); err != nil {
		return Created{}, err
	}
	if err := m.policy.Check(ctx, in.URL); err != nil {
		return Created{}, err
	}
	sub := Subscription{ID: core.NewUUID(), URL: in.URL, Types: types, BusinessID: in.Business,
		Description: in.Description, Origin: ByAPI, Enabled: true}
	text, sealed := m.secrets.New(sub.ID)
	sub.Secret = sealed
	if err := m.store.Create(ctx, &sub); err != nil {
		return Created{}, err
	}
	sub.Secret = nil
	return Created{Subscription: sub, SecretText: text}, nil
}

// List returns a page of the acting business's subscriptions, newest first.
func (m *Manager) List(ctx context.Context, business string, p PageRequest) (Page[Subscription], error) {
	if err := m.authorize(ctx, business); err != nil {
		return Page[Subscription]{}, err
	}
	p, err := p.normal()
	if err != nil {
		return Page[Subscription]{}, err
	}
	subs, total, err := m.store.List(ctx, business, p)
	if err != nil {
		return Page[Subscription]{}, err
	}
	return Page[Subscription]{Items: subs, TotalCount: total, Page: p.Page, Limit: p.Limit}, nil
}

// Get returns one subscription of the acting business.
func (m *Manager) Get(ctx context.Context, business, id string) (Subscription, error) {
	if err := m.authorize(ctx, business); err != nil {
		return Subscription{}, err
	}
	return m.store.Get(ctx, business, id)
}

// Update changes a subscription. A new URL passes the policy and makes the
// subscription the practice's (ByAPI: its address checked on every
// connection), whoever made it. Enabling clears DisabledReason.
func (m *Manager) Update(ctx context.Context, business, id string, e WebhookEdit) (Subscription, error) {
	if err := m.authorize(ctx, business); err != nil {
		return Subscription{}, err
	}
	var types []string
	if e.Types != nil {
		var err error
		if types, err = checkTypes(e.Types); err != nil {
			return Subscription{}, err
		}
	}
	if e.Description != nil {
		if err := checkDescription(*e.Description); err != nil {
			return Subscription{}, err
		}
	}
	if e.URL != nil {
		if err := m.policy.Check(ctx, *e.URL); err != nil {
			return Subscription{}, err
		}
	}
	return m.store.Update(ctx, business, id, func(s *Subscription) error {
		if e.URL != nil && *e.URL != s.URL {
			s.URL, s.Origin = *e.URL, ByAPI
		}
		if types != nil {
			s.Types = types
		}
		if e.Description != nil {
			s.Description = *e.Description
		}
		if e.Enabled != nil && *e.Enabled != s.Enabled {
			s.Enabled = *e.Enabled
			s.DisabledReason = ""
			if !s.Enabled {
				s.DisabledReason = DisabledByBusiness
			}
		}
		return nil
	})
}

// The reasons a subscription is disabled.
const (
	DisabledByBusiness = "disabled by the business"
	DisabledFailing    = "every delivery failed for 24 hours"
)

// Delete removes a subscription and its delivery log.
func (m *Manager) Delete(ctx context.Context, business, id string) error {
	if err := m.authorize(ctx, business); err != nil {
		return err
	}
	return m.store.Delete(ctx, business, id)
}

// RotateSecret gives a subscription a new secret and returns its text; the
// old one signs too for RotationOverlap.
func (m *Manager) RotateSecret(ctx context.Context, business, id string) (string, error) {
	if err := m.authorize(ctx, business); err != nil {
		return "", err
	}
	text, sealed := m.secrets.New(id)
	if err := m.store.Rotate(ctx, business, id, sealed, RotationOverlap); err != nil {
		return "", err
	}
	return text, nil
}

// Deliveries returns a page of a subscription's delivery log, newest
// first; state "" is every state.
func (m *Manager) Deliveries(ctx context.Context, business, id string, state State, p PageRequest) (Page[DeliveryRecord], error) {
	if err := m.authorize(ctx, business); err != nil {
		return Page[DeliveryRecord]{}, err
	}
	p, err := p.normal()
	if err != nil {
		return Page[DeliveryRecord]{}, err
	}
	recs, total, err := m.store.Deliveries(ctx, business, id, state, p)
	if err != nil {
		return Page[DeliveryRecord]{}, err
	}
	return Page[DeliveryRecord]{Items: recs, TotalCount: total, Page: p.Page, Limit: p.Limit}, nil
}

// enabled is nil when business's subscription id is enabled, else
// ErrDisabled (or ErrSubscriptionNotFound).
func (m *Manager) enabled(ctx context.Context, business, id string) error {
	s, err := m.store.Get(ctx, business, id)
	if err != nil {
		return err
	}
	if !s.Enabled {
		return ErrDisabled
	}
	return nil
}

// Retry delivers one delivery once more, under the same event id.
func (m *Manager) Retry(ctx context.Context, business, id string, delivery int64) error {
	if err := m.authorize(ctx, business); err != nil {
		return err
	}
	if err := m.enabled(ctx, business, id); err != nil {
		return err
	}
	return m.store.Retry(ctx, business, id, delivery)
}

// Replay delivers again every event of the business the subscription
// selects that occurred in [since, until), at most ReplayWindow back.
func (m *Manager) Replay(ctx context.Context, business, id string, since, until time.Time) (int, error) {
	if err := m.authorize(ctx, business); err != nil {
		return 0, err
	}
	now := m.now()
	switch {
	case !since.Before(until):
		return 0, ErrInvalidWebhook.WithMessage("Validation failed: since must be before until")
	case since.Before(now.Add(-ReplayWindow)):
		return 0, ErrInvalidWebhook.WithMessage("Validation failed: since may be at most 7 days ago")
	}
	if err := m.enabled(ctx, business, id); err != nil {
		return 0, err
	}
	return m.store.Replay(ctx, business, id, since, until)
}

// Test delivers a webhook.test event to the subscription only.
func (m *Manager) Test(ctx context.Context, business, id string) (core.Event, error) {
	if err := m.authorize(ctx, business); err != nil {
		return core.Event{}, err
	}
	if err := m.enabled(ctx, business, id); err != nil {
		return core.Event{}, err
	}
	e := core.NewEvent(core.WebhookTest, business, core.WebhookTestData{WebhookID: id})
	if err := m.store.Test(ctx, business, id, e); err != nil {
		return core.Event{}, err
	}
	return e, nil
}
