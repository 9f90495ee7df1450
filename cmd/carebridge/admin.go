package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/adapters/webhook"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/event"
)

const adminUsage = `usage:
  carebridge admin create-business --name N --email E --owner SUB
  carebridge admin add-member --business ID --sub SUB --role owner|admin|staff
  carebridge admin create-provider --first F --last L --email E [--telehealth URL] --location ID
  carebridge admin add-webhook --url URL --events T1,T2|'*' [--business ID]
  carebridge admin list-webhooks
  carebridge admin remove-webhook --id ID
  carebridge admin webhook-deliveries [--failed] [--limit N]
  carebridge admin reseal-webhooks`

// admin runs the commands the HTTP API has no endpoint for: seeding data
// and managing webhook subscriptions. Each prints JSON.
func admin(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(adminUsage)
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("admin "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := businessCommand(ctx, cmd, fs)
	if run == nil {
		run = webhookCommand(ctx, cmd, fs, getenv)
	}
	if run == nil {
		return fmt.Errorf("unknown admin command %q\n%s", cmd, adminUsage)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v\n%s", err, adminUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), adminUsage)
	}
	return runAdmin(ctx, getenv, stdout, run)
}

// adminRun is what an admin command does, its flags parsed, with the
// database; it returns what to print.
type adminRun func(*postgres.Store) (any, error)

// runAdmin migrates and opens the database of DATABASE_URL, runs run with
// it, and prints its result as JSON.
func runAdmin(ctx context.Context, getenv env, stdout io.Writer, run adminRun) error {
	url := getenv.or("DATABASE_URL", "")
	if url == "" {
		return errors.New("DATABASE_URL: is required")
	}
	if err := postgres.Migrate(url); err != nil {
		return err
	}
	db, err := postgres.New(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	out, err := run(db)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(out)
}

// businessCommand declares on fs the flags of cmd, a command that seeds
// businesses, members and providers, and returns what it does; nil when
// cmd is not one of them.
func businessCommand(ctx context.Context, cmd string, fs *flag.FlagSet) adminRun {
	switch cmd {
	case "create-business":
		name := fs.String("name", "", "business name")
		email := fs.String("email", "", "business e-mail")
		owner := fs.String("owner", "", "subject (token sub) of the owner")
		return func(db *postgres.Store) (any, error) {
			b, err := app.NewBusinessWithoutLogos(db).CreateBusiness(ctx, *name, *email, *owner)
			return map[string]string{"id": b.ID}, err
		}
	case "add-member":
		businessID := fs.String("business", "", "the business's id")
		sub := fs.String("sub", "", "subject (token sub) of the new member")
		role := fs.String("role", "", "owner, admin or staff")
		return func(db *postgres.Store) (any, error) {
			m, err := app.NewBusinessWithoutLogos(db).CreateMember(ctx, *businessID, *sub, core.Role(*role))
			if err != nil {
				return nil, err
			}
			return memberJSON{BusinessID: m.BusinessID, Subject: m.Subject, Role: string(m.Role), CreatedAt: m.CreatedAt.UTC()}, nil
		}
	case "create-provider":
		first := fs.String("first", "", "first name")
		last := fs.String("last", "", "last name")
		email := fs.String("email", "", "e-mail")
		telehealth := fs.String("telehealth", "", "telehealth link (http(s) URL)")
		location := fs.Int64("location", 0, "id of the location the provider is affiliated with")
		return func(db *postgres.Store) (any, error) {
			p, err := app.NewBusinessWithoutLogos(db).CreateProvider(ctx, business.Provider{FirstName: *first, LastName: *last, Email: *email, TelehealthLink: *telehealth}, *location)
			return map[string]int64{"id": p.ID}, err
		}
	}
	return nil
}

// webhookCommand declares on fs the flags of cmd, a command that manages
// webhook subscriptions, and returns what it does; nil when cmd is not one
// of them.
func webhookCommand(ctx context.Context, cmd string, fs *flag.FlagSet, getenv env) adminRun {
	switch cmd {
	case "add-webhook":
		url := fs.String("url", "", "the receiver's http(s) URL")
		types := fs.String("events", "", "comma-separated event types, or '*'")
		businessID := fs.String("business", "", "only this business's events")
		return func(db *postgres.Store) (any, error) { return addWebhook(ctx, db, getenv, *url, *types, *businessID) }
	case "list-webhooks":
		return func(db *postgres.Store) (any, error) {
			subs, err := db.Webhooks().All(ctx)
			out := make([]webhookJSON, len(subs))
			for i, s := range subs {
				out[i] = toWebhookJSON(s)
			}
			return out, err
		}
	case "remove-webhook":
		id := fs.String("id", "", "the subscription's id")
		return func(db *postgres.Store) (any, error) {
			if err := db.Webhooks().Remove(ctx, *id); err != nil {
				return nil, err
			}
			return map[string]string{"removed": *id}, nil
		}
	case "reseal-webhooks":
		return func(db *postgres.Store) (any, error) { return resealWebhooks(ctx, db, getenv) }
	case "webhook-deliveries":
		failed := fs.Bool("failed", false, "only the deliveries given up after 24 hours of retries")
		limit := fs.Int("limit", 100, "at most this many, newest first")
		return func(db *postgres.Store) (any, error) {
			if *limit < 1 || *limit > 10000 {
				return nil, errors.New("--limit must be 1 to 10000")
			}
			ds, err := db.Webhooks().AllDeliveries(ctx, *failed, *limit)
			return toDeliveriesJSON(ds), err
		}
	}
	return nil
}

// memberJSON is a member as add-member prints it.
type memberJSON struct {
	BusinessID string    `json:"businessId"`
	Subject    string    `json:"subject"`
	Role       string    `json:"role"`
	CreatedAt  time.Time `json:"createdAt"`
}

// webhookJSON is a subscription as list-webhooks prints it (never its
// secret).
type webhookJSON struct {
	ID         string   `json:"id"`
	URL        string   `json:"url"`
	Events     []string `json:"events"`
	BusinessID *string  `json:"businessId"`
	// Origin is who made it: operator (this CLI) or api (a practice).
	Origin         string  `json:"origin"`
	Description    string  `json:"description"`
	Enabled        bool    `json:"enabled"`
	DisabledReason *string `json:"disabledReason"`
	CreatedAt      string  `json:"createdAt"`
}

func toWebhookJSON(s event.Subscription) webhookJSON {
	w := webhookJSON{ID: s.ID, URL: s.URL, Events: s.Types, Origin: string(s.Origin), Description: s.Description,
		Enabled: s.Enabled, CreatedAt: s.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	if s.BusinessID != "" {
		w.BusinessID = &s.BusinessID
	}
	if s.DisabledReason != "" {
		w.DisabledReason = &s.DisabledReason
	}
	return w
}

// deliveryJSON is a delivery as webhook-deliveries prints it; the CLI owns
// this format (event.DeliveryRecord's json tags are not used).
type deliveryJSON struct {
	ID            int64      `json:"id"`
	Subscription  string     `json:"subscriptionId"`
	EventID       string     `json:"eventId"`
	Type          string     `json:"type"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	LastStatus    int        `json:"lastStatus,omitempty"`
	LastError     string     `json:"lastError,omitempty"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	OccurredAt    time.Time  `json:"occurredAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
}

// toDeliveriesJSON is ds as webhook-deliveries prints them: [] when none.
func toDeliveriesJSON(ds []event.DeliveryRecord) []deliveryJSON {
	out := make([]deliveryJSON, len(ds))
	for i, d := range ds {
		out[i] = deliveryJSON{ID: d.ID, Subscription: d.Subscription, EventID: d.EventID, Type: string(d.Type),
			State: string(d.State), Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: d.LastError,
			NextAttemptAt: d.NextAttemptAt, OccurredAt: d.OccurredAt, UpdatedAt: d.UpdatedAt}
	}
	return out
}

// addWebhook checks and stores a subscription, and returns its id and
// secret: the only time the secret is shown. The secret is stored sealed
// under the service's first key, as the service resolves it.
func addWebhook(ctx context.Context, db *postgres.Store, getenv env, url, types, businessID string) (any, error) {
	if err := webhook.ValidURL(url); err != nil {
		return nil, fmt.Errorf("--url: %w", err)
	}
	parsed, err := event.ParseTypes(types)
	if err != nil {
		var ce *core.Error
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("--events: %s", ce.Message)
		}
		return nil, fmt.Errorf("--events: %w", err)
	}
	if businessID != "" {
		b, err := db.Businesses().Get(ctx, businessID)
		if errors.Is(err, business.ErrBusinessNotFound) {
			return nil, fmt.Errorf("--business: business %q not found", businessID)
		}
		if err != nil {
			return nil, err
		}
		businessID = b.ID
	}
	sealer, err := webhookSealer(ctx, db, getenv)
	if err != nil {
		return nil, err
	}
	text, raw := webhook.NewSecret()
	sub := event.Subscription{ID: core.NewUUID(), URL: url, Types: parsed, BusinessID: businessID}
	sub.Secret = sealer.Seal(sub.ID, raw)
	if err := db.Webhooks().Add(ctx, &sub); err != nil {
		return nil, err
	}
	return map[string]string{"id": sub.ID, "secret": text}, nil
}

// webhookSealer seals and opens webhook secrets with the service's keys:
// SERVICE_KEYS, else the key kept in PostgreSQL (created when missing),
// and the legacy keys, resolved as the service resolves them.
func webhookSealer(ctx context.Context, db *postgres.Store, getenv env) (*webhook.Sealer, error) {
	keys, legacy, err := serviceKeys(getenv)
	if err != nil {
		return nil, err
	}
	resolved, err := app.LoadKeys(ctx, db, keys, legacy)
	if err != nil {
		return nil, err
	}
	return resolved.WebhookSealer()
}

// resealWebhooks seals every webhook secret again under the first service
// key, so that the older keys can be removed from SERVICE_KEYS. It lists
// the subscriptions whose secret no key opens (their deliveries already
// fail: remove and add them again).
func resealWebhooks(ctx context.Context, db *postgres.Store, getenv env) (any, error) {
	sealer, err := webhookSealer(ctx, db, getenv)
	if err != nil {
		return nil, err
	}
	n, failed, err := db.Webhooks().Reseal(ctx, sealer.Reseal)
	if err != nil {
		return nil, err
	}
	return struct {
		Resealed   int      `json:"resealed"`
		Unopenable []string `json:"unopenable"`
	}{n, append([]string{}, failed...)}, nil
}
