package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/audit"
)

const auditUsage = `usage:
  carebridge audit list [--since 24h|RFC3339] [--actor SUB] [--action A] [--business ID] [--limit N]
  carebridge audit verify`

// auditCmd reads the audit trail: list prints events as JSON lines, verify
// recomputes the hash chain. Neither migrates nor writes: a role that may
// only read the trail can run them.
func auditCmd(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(auditUsage)
	}
	cmd, args := args[0], args[1:]
	var run func(*postgres.AuditTrail) error
	switch cmd {
	case "list":
		f, err := parseAuditList(args, time.Now())
		if err != nil {
			return err
		}
		run = func(trail *postgres.AuditTrail) error {
			events, err := trail.List(ctx, f)
			if err != nil {
				return err
			}
			return writeAuditEvents(stdout, events)
		}
	case "verify":
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q\n%s", args[0], auditUsage)
		}
		run = func(trail *postgres.AuditTrail) error {
			events, firstBad, ok, err := trail.Verify(ctx)
			if err != nil {
				return err
			}
			return writeVerification(stdout, events, firstBad, ok)
		}
	default:
		return fmt.Errorf("unknown audit command %q\n%s", cmd, auditUsage)
	}

	url := getenv.or("DATABASE_URL", "")
	if url == "" {
		return errors.New("DATABASE_URL: is required")
	}
	db, err := postgres.New(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	return run(db.AuditTrail())
}

// parseAuditList reads the flags of audit list; a --since duration counts
// back from now.
func parseAuditList(args []string, now time.Time) (postgres.AuditFilter, error) {
	fs := flag.NewFlagSet("audit list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	since := fs.String("since", "24h", "a duration back from now (24h, 90m) or an RFC 3339 time")
	actor := fs.String("actor", "", "only this actor (token sub)")
	action := fs.String("action", "", "only this action")
	business := fs.String("business", "", "only the events of this business (its id)")
	limit := fs.Int("limit", 1000, "at most this many of the most recent events")
	if err := fs.Parse(args); err != nil {
		return postgres.AuditFilter{}, fmt.Errorf("%v\n%s", err, auditUsage)
	}
	if fs.NArg() > 0 {
		return postgres.AuditFilter{}, fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), auditUsage)
	}
	f := postgres.AuditFilter{Actor: *actor, Action: audit.Action(*action), Business: *business, Limit: *limit}
	var err error
	if f.Since, err = parseSince(*since, now); err != nil {
		return postgres.AuditFilter{}, err
	}
	if f.Action != "" && !slices.Contains(audit.Actions, f.Action) {
		valid := make([]string, len(audit.Actions))
		for i, a := range audit.Actions {
			valid[i] = string(a)
		}
		return postgres.AuditFilter{}, fmt.Errorf("--action %q: unknown; valid actions: %s", *action, strings.Join(valid, ", "))
	}
	if f.Limit <= 0 {
		return postgres.AuditFilter{}, fmt.Errorf("--limit %d: must be a positive number", f.Limit)
	}
	return f, nil
}

func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %q: a duration counts back from now and must not be negative", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %q: want a duration such as 24h or 90m, or an RFC 3339 time such as 2025-03-01T00:00:00Z", s)
	}
	return t, nil
}

// auditLine is one event as audit list prints it.
type auditLine struct {
	ID           int64          `json:"id"`
	At           string         `json:"at"`
	RequestID    string         `json:"requestId"`
	Actor        string         `json:"actor"`
	Action       string         `json:"action"`
	ResourceType string         `json:"resourceType"`
	ResourceID   string         `json:"resourceId"`
	BusinessID   *string        `json:"businessId"` // null when none
	Outcome      string         `json:"outcome"`
	Status       int            `json:"status"`
	Detail       map[string]any `json:"detail"`
	Hash         string         `json:"hash"`
}

func writeAuditEvents(w io.Writer, events []audit.Event) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, e := range events {
		detail := e.Detail
		if detail == nil {
			detail = map[string]any{}
		}
		var business *string
		if e.BusinessID != "" {
			business = &e.BusinessID
		}
		err := enc.Encode(auditLine{
			ID: e.ID, At: e.At.UTC().Format(time.RFC3339Nano), RequestID: e.RequestID, Actor: e.Actor,
			Action: string(e.Action), ResourceType: e.ResourceType, ResourceID: e.ResourceID,
			BusinessID: business, Outcome: string(e.Outcome), Status: e.Status, Detail: detail, Hash: hex.EncodeToString(e.Hash),
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeVerification prints the result of audit verify and, when the chain
// does not check out, returns the error that makes the command exit 1.
func writeVerification(w io.Writer, events int, firstBad int64, ok bool) error {
	out := struct {
		Events   int   `json:"events"`
		OK       bool  `json:"ok"`
		FirstBad int64 `json:"firstBad,omitempty"`
	}{events, ok, firstBad}
	if err := json.NewEncoder(w).Encode(out); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("audit trail does not verify from event %d on", firstBad)
	}
	return nil
}
