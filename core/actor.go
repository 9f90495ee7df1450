package core

import "context"

// Actor is the authenticated caller: the token's subject and the SMART
// scopes it was granted.
type Actor struct {
	Subject string
	Scopes  []Scope
}

// Allows reports whether the actor's scopes grant perm on resource in
// context.
func (a Actor) Allows(context, resource string, perm byte) bool {
	return Allows(a.Scopes, context, resource, perm)
}

type actorKey struct{}

// WithActor returns ctx carrying a.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the caller stored in ctx by the auth middleware.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok && a.Subject != ""
}

// ErrUnauthenticated is returned when a use case runs without a caller.
var ErrUnauthenticated = &Error{Kind: KindUnauthenticated, Code: "unauthenticated", Message: "Authentication required"}
