package ehr

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/carebridge/carebridge/core"
)

// Person links (the contract's "Person links"): a member's decision that
// two EHR records are, or are not, the same person. A link applies to the
// searches of the business it was made for, from its next request; it
// overrides the matcher either way, and when two links disagree the newer
// one wins.

// Decision is what a member decided of two records.
type Decision string

// The decisions.
const (
	Same      Decision = "same"
	Different Decision = "different"
)

// PersonLink is one decision of a business about two records. It keeps
// only the systems' names and their patient ids: no patient data.
type PersonLink struct {
	ID        string
	Business  string
	Decision  Decision
	Records   [2]SourceRef
	CreatedBy string
	CreatedAt time.Time
}

// LinkStore keeps the person links of every business (a driven port;
// adapters/postgres implements it).
type LinkStore interface {
	// Put stores l, the newer decision on its pair of records: a link of
	// the same business on the same two records (in either order) is
	// replaced, whichever of two concurrent Puts commits last wins. It
	// sets l's CreatedAt and commits the request's pending audit event
	// (audit.Pending) with it.
	Put(ctx context.Context, l PersonLink) (PersonLink, error)
	// List returns a page of business's links, newest first, and their
	// total count.
	List(ctx context.Context, business string, p PageRequest) ([]PersonLink, int, error)
	// Delete removes business's link id and commits the request's pending
	// audit event with it; ErrLinkNotFound when business has no such link.
	Delete(ctx context.Context, business, id string) (PersonLink, error)
	// Links returns every link of business as a LinkSet. It answers the
	// links committed before the call (on any instance); an adapter may
	// keep them in memory only as long as it hears of every change.
	Links(ctx context.Context, business string) (*LinkSet, error)
}

// The failures of person links.
var (
	ErrInvalidLink  = &core.Error{Kind: core.KindInvalid, Code: "invalid_link", Message: "Invalid person link"}
	ErrLinkNotFound = &core.Error{Kind: core.KindNotFound, Code: "link_not_found", Message: "Person link not found"}
)

// maxPatientIDLen bounds an EHR patient id in a link (FHIR ids are at
// most 64 characters; other systems' ids somewhat longer).
const maxPatientIDLen = 256

// LinkRequest is a member's decision as the HTTP edge parsed it.
type LinkRequest struct {
	Business string // the acting business
	Decision string
	Records  []SourceRef
}

// Links is the person-links use case.
type Links struct {
	systems Systems
	store   LinkStore
}

// NewLinks returns the person-links use case over the systems in force
// (a link names only systems of its business) and store.
func NewLinks(systems Systems, store LinkStore) *Links {
	return &Links{systems: systems, store: store}
}

// Create checks r and stores it as the newer decision on its records.
func (l *Links) Create(ctx context.Context, r LinkRequest) (PersonLink, error) {
	actor, err := checkLinks(ctx, r.Business)
	if err != nil {
		return PersonLink{}, err
	}
	link, err := l.validate(r)
	if err != nil {
		return PersonLink{}, err
	}
	link.ID, link.CreatedBy = core.NewUUID(), actor.Subject
	return l.store.Put(ctx, link)
}

// List returns a page of the business's links, newest first.
func (l *Links) List(ctx context.Context, business string, p PageRequest) (Page[PersonLink], error) {
	if _, err := checkLinks(ctx, business); err != nil {
		return Page[PersonLink]{}, err
	}
	p, err := p.normal()
	if err != nil {
		return Page[PersonLink]{}, err
	}
	items, total, err := l.store.List(ctx, business, p)
	if err != nil {
		return Page[PersonLink]{}, err
	}
	if items == nil {
		items = []PersonLink{}
	}
	return Page[PersonLink]{Items: items, TotalCount: total, Page: p.Page, Limit: p.Limit}, nil
}

// Delete removes the business's link id.
func (l *Links) Delete(ctx context.Context, business, id string) (PersonLink, error) {
	if _, err := checkLinks(ctx, business); err != nil {
		return PersonLink{}, err
	}
	if !core.IsUUID(id) {
		return PersonLink{}, ErrLinkNotFound
	}
	return l.store.Delete(ctx, business, strings.ToLower(id))
}

// checkLinks allows the person-links calls to a caller with u on Patient
// in context user or system, acting for a business (the HTTP edge has
// checked that it is a member).
func checkLinks(ctx context.Context, business string) (core.Actor, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return core.Actor{}, core.ErrUnauthenticated
	}
	if err := linkScope(actor); err != nil {
		return core.Actor{}, err
	}
	if business == "" {
		return core.Actor{}, ErrBusinessRequired
	}
	return actor, nil
}

// linkScope allows the person-links calls to a caller with u on Patient in
// context user or system. Tenancy asks it before the acting business, so a
// caller without it learns that first.
func linkScope(actor core.Actor) error {
	if !actor.Allows(core.ContextUser, "Patient", core.PermUpdate) && !actor.Allows(core.ContextSystem, "Patient", core.PermUpdate) {
		return core.InsufficientScope("user/Patient.u")
	}
	return nil
}

// validate checks r: a known decision, two different records, each of a
// system of the business with a plausible patient id.
func (l *Links) validate(r LinkRequest) (PersonLink, error) {
	link := PersonLink{Business: r.Business, Decision: Decision(r.Decision)}
	if link.Decision != Same && link.Decision != Different {
		return link, ErrInvalidLink.WithMessage("decision must be same or different")
	}
	if len(r.Records) != 2 {
		return link, ErrInvalidLink.WithMessage("records must name exactly two records")
	}
	known := map[string]bool{}
	for _, sys := range l.systems.Search(r.Business) {
		known[sys.Name] = true
	}
	for i, rec := range r.Records {
		if !known[rec.Source] {
			return link, ErrInvalidLink.WithMessage("records[%d].source is not an EHR system of this business", i)
		}
		if !plausibleID(rec.PatientID) {
			return link, ErrInvalidLink.WithMessage("records[%d].patientId must be 1 to %d printable characters", i, maxPatientIDLen)
		}
		link.Records[i] = rec
	}
	if link.Records[0] == link.Records[1] {
		return link, ErrInvalidLink.WithMessage("records must name two different records")
	}
	return link, nil
}

// plausibleID reports whether id can be an EHR's patient id: not empty,
// not too long, nothing unprintable.
func plausibleID(id string) bool {
	if id == "" || len(id) > maxPatientIDLen {
		return false
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// normal applies the paging defaults and bounds of every listing.
func (p PageRequest) normal() (PageRequest, error) {
	switch {
	case p.Page == 0:
		p.Page = 1
	case p.Page < 1 || p.Page > MaxPage:
		return p, ErrInvalidLink.WithMessage("page must be between 1 and %d", MaxPage)
	}
	switch {
	case p.Limit == 0:
		p.Limit = DefaultLimit
	case p.Limit < 1 || p.Limit > MaxLimit:
		return p, ErrInvalidLink.WithMessage("limit must be between 1 and %d", MaxLimit)
	}
	return p, nil
}

// LinkSet is the links of one business, as matching reads them: every
// decision on a pair of records, newest first. It is never changed once
// made, so it may be shared.
type LinkSet struct {
	links  []PersonLink // newest first
	digest string       // names the set's content (see Digest)
}

// NewLinkSet returns the set of links (in any order).
func NewLinkSet(links []PersonLink) *LinkSet {
	ls := slices.Clone(links)
	slices.SortStableFunc(ls, func(a, b PersonLink) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	h := sha256.New()
	for _, l := range ls {
		h.Write([]byte(l.ID + "\x00" + string(l.Decision) + "\x00" + l.Records[0].Source + "\x00" + l.Records[0].PatientID +
			"\x00" + l.Records[1].Source + "\x00" + l.Records[1].PatientID + "\x01"))
	}
	return &LinkSet{links: ls, digest: hex.EncodeToString(h.Sum(nil)[:12])}
}

// Digest names the set's content: two sets with the same links have the
// same digest. A nil set has the empty digest.
func (s *LinkSet) Digest() string {
	if s == nil {
		return ""
	}
	return s.digest
}

// Len is the number of links.
func (s *LinkSet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.links)
}
