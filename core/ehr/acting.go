package ehr

import (
	"context"
	"fmt"
	"strings"

	"github.com/carebridge/carebridge/core"
)

// The acting business (the contract's "Practices: members, roles and the
// acting business"): search, appointments and agents act for one business,
// the one the request names (X-Business-Id), else the caller's only
// membership. Its systems answer, and nothing of another business does.

// Practices tells the acting-business policy who belongs where (a driven
// port; app wires the business members and businesses).
type Practices interface {
	// BusinessesOf returns the ids of the businesses subject is a member of.
	BusinessesOf(ctx context.Context, subject string) ([]string, error)
	// BusinessExists reports whether business id exists.
	BusinessExists(ctx context.Context, id string) (bool, error)
}

// Use is which endpoint acts for a business: it decides whether the caller
// acts in patient context there.
type Use uint8

// The uses of an acting business.
const (
	UseSearch       Use = iota + 1
	UseBook             // POST /appointment/customer
	UseAppointments     // GET /appointment
	UseChange           // cancel, reschedule
	UseAgents           // /agents…
	// UseLinks is /api/v1/person-links: a member's decision is always
	// for one business, so the general rule applies even in a
	// single-practice deployment (the header, else the caller's only
	// membership, else business_required), and only as a member.
	UseLinks
	// UseWebhooks is /api/v1/webhooks: a practice's subscriptions are
	// always one business's, so it resolves as UseLinks does, without a
	// scope (the webhook use case asks for an owner or admin).
	UseWebhooks
)

// The failures of the acting business.
var (
	ErrBusinessRequired = &core.Error{Kind: core.KindInvalid, Code: "business_required",
		Message: "Name the business to act for in the X-Business-Id header"}
	ErrBusinessNotFound = &core.Error{Kind: core.KindNotFound, Code: "business_not_found", Message: "Business not found"}
)

// Tenancy resolves the acting business of a request.
type Tenancy struct {
	systems   Systems
	practices Practices
}

// NewTenancy returns the acting-business policy over the systems in force
// (which tell a multi-practice deployment) and practices.
func NewTenancy(systems Systems, practices Practices) *Tenancy {
	return &Tenancy{systems: systems, practices: practices}
}

// Act resolves the business the caller in ctx acts for on use, requested
// being the business the request names ("" none), and returns its id (""
// none: a single-practice deployment). The edge names it in the request it
// makes of the use cases of this package (SearchRequest.Business,
// BookingRequest.Business, …).
func (t *Tenancy) Act(ctx context.Context, requested string, u Use) (string, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return "", core.ErrUnauthenticated
	}
	if u == UseLinks {
		if err := linkScope(actor); err != nil {
			return "", err
		}
	}
	multi := t.systems.MultiPractice() || u == UseLinks || u == UseWebhooks
	var id string
	var err error
	if u == UseSearch && requested == "" && !multi {
		id, err = soleBusiness(ctx, t.practices, actor.Subject)
	} else {
		id, err = acting(ctx, t.practices, actor.Subject, strings.ToLower(requested), patientContext(actor, u), multi)
	}
	if err != nil {
		return "", err
	}
	return id, nil
}

// soleBusiness is what a search names no business for in a
// single-practice deployment: the caller's only membership, so that its
// practice's person links apply, as they do to the links it makes
// (UseLinks); "" when it is a member of none or several (the search works
// for any caller, as before).
func soleBusiness(ctx context.Context, p Practices, subject string) (string, error) {
	mine, err := p.BusinessesOf(ctx, subject)
	if err != nil {
		return "", fmt.Errorf("read memberships: %w", err)
	}
	if len(mine) == 1 {
		return strings.ToLower(mine[0]), nil
	}
	return "", nil
}

// acting is the policy: the requested business when the caller may act for
// it (a member, or any existing business in patient context); else, in a
// multi-practice deployment, the caller's only membership. A
// single-practice deployment asks nothing when no business is named: it
// acts for none, as before businesses had systems, whatever the caller's
// memberships (which may change without moving a patient's bookings).
func acting(ctx context.Context, p Practices, subject, requested string, patient, multi bool) (string, error) {
	if requested == "" && !multi {
		return "", nil
	}
	if requested == "" || !patient {
		mine, err := p.BusinessesOf(ctx, subject)
		if err != nil {
			return "", fmt.Errorf("read memberships: %w", err)
		}
		switch {
		case requested != "":
			for _, id := range mine {
				if strings.EqualFold(id, requested) {
					return requested, nil
				}
			}
			return "", ErrBusinessNotFound
		case len(mine) == 1:
			return strings.ToLower(mine[0]), nil
		}
		return "", ErrBusinessRequired
	}
	ok, err := p.BusinessExists(ctx, requested)
	if err != nil {
		return "", fmt.Errorf("read business: %w", err)
	}
	if !ok {
		return "", ErrBusinessNotFound
	}
	return requested, nil
}

// patientContext reports whether the caller acts in patient context on u:
// for appointments, when only its patient scope grants the call; for
// agents, when it has any patient scope; never for search and person links.
func patientContext(a core.Actor, u Use) bool {
	var perm byte
	switch u {
	case UseBook:
		perm = core.PermCreate
	case UseAppointments:
		perm = core.PermSearch
	case UseChange:
		perm = core.PermUpdate
	case UseAgents:
		for _, s := range a.Scopes {
			if s.Context == core.ContextPatient {
				return true
			}
		}
		return false
	default:
		return false
	}
	r, err := appointmentReach(a, perm)
	return err == nil && r == reachOwn
}

// checkActing checks the acting business a request names (its Business
// field, which the edge sets from Act): without one, a multi-practice
// deployment refuses (nothing may be asked of every practice's systems at
// once); a single-practice one acts for none.
func checkActing(systems Systems, business string) error {
	if business == "" && systems.MultiPractice() {
		return ErrBusinessRequired
	}
	return nil
}
