package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/test/pgtest"
)

func TestParseAuditList(t *testing.T) {
	now := time.Date(2025, 3, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		args []string
		want postgres.AuditFilter
	}{
		{nil, postgres.AuditFilter{Since: now.Add(-24 * time.Hour), Limit: 1000}},
		{[]string{"--since", "90m"}, postgres.AuditFilter{Since: now.Add(-90 * time.Minute), Limit: 1000}},
		{[]string{"--since=2025-03-01T08:00:00+01:00"}, postgres.AuditFilter{Since: time.Date(2025, 3, 1, 7, 0, 0, 0, time.UTC), Limit: 1000}},
		{[]string{"--actor", "alice", "--action", "blob.download", "--limit", "5"},
			postgres.AuditFilter{Since: now.Add(-24 * time.Hour), Actor: "alice", Action: audit.BlobDownload, Limit: 5}},
		{[]string{"--business", "6f1c2a9e-0d4b-4e8a-9c3f-5b7d1e2a4c60"},
			postgres.AuditFilter{Since: now.Add(-24 * time.Hour), Business: "6f1c2a9e-0d4b-4e8a-9c3f-5b7d1e2a4c60", Limit: 1000}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseAuditList(tt.args, now)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Since.Equal(tt.want.Since) || got.Actor != tt.want.Actor || got.Action != tt.want.Action ||
				got.Business != tt.want.Business || got.Limit != tt.want.Limit {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseAuditList_ExplainsBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want []string // in the error
	}{
		{[]string{"--action", "patient.read"}, []string{`"patient.read"`, "valid actions", "blob.upload", "patient.search", "appointment.reschedule"}},
		{[]string{"--since", "yesterday"}, []string{`--since "yesterday"`, "24h", "RFC 3339"}},
		{[]string{"--since", "7d"}, []string{`--since "7d"`}},
		{[]string{"--since", "-1h"}, []string{"negative"}},
		{[]string{"--limit", "0"}, []string{"--limit 0", "positive"}},
		{[]string{"--limit", "ten"}, []string{"limit", "usage:"}},
		{[]string{"--verbose"}, []string{"verbose", "usage:"}},
		{[]string{"alice"}, []string{`unexpected argument "alice"`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := parseAuditList(tt.args, time.Now())
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestWriteAuditEvents_OneJSONLinePerEvent(t *testing.T) {
	var out bytes.Buffer
	err := writeAuditEvents(&out, []audit.Event{
		{ID: 1, At: time.Date(2025, 3, 1, 10, 0, 0, 123000, time.FixedZone("CET", 3600)), RequestID: "r1",
			Action: audit.BlobDownload, ResourceType: "blob", ResourceID: "7", Outcome: audit.Denied, Status: 401,
			Hash: []byte{0xab, 0x01}},
		{ID: 2, At: time.Date(2025, 3, 1, 9, 1, 0, 0, time.UTC), RequestID: "r2", Actor: "alice",
			Action: audit.PatientSearch, ResourceType: "patient", BusinessID: "6f1c2a9e-0d4b-4e8a-9c3f-5b7d1e2a4c60",
			Outcome: audit.Success, Status: 200, Detail: map[string]any{"results": 2.0, "sources": []any{"epic"}, "cacheHit": true}, Hash: []byte{0xff}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":1,"at":"2025-03-01T09:00:00.000123Z","requestId":"r1","actor":"","action":"blob.download","resourceType":"blob","resourceId":"7","businessId":null,"outcome":"denied","status":401,"detail":{},"hash":"ab01"}
{"id":2,"at":"2025-03-01T09:01:00Z","requestId":"r2","actor":"alice","action":"patient.search","resourceType":"patient","resourceId":"","businessId":"6f1c2a9e-0d4b-4e8a-9c3f-5b7d1e2a4c60","outcome":"success","status":200,"detail":{"cacheHit":true,"results":2,"sources":["epic"]},"hash":"ff"}
`
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestWriteVerification(t *testing.T) {
	var out bytes.Buffer
	if err := writeVerification(&out, 12, 0, true); err != nil || out.String() != `{"events":12,"ok":true}`+"\n" {
		t.Fatalf("ok: %q %v", out.String(), err)
	}
	out.Reset()
	err := writeVerification(&out, 12, 4, false)
	if err == nil || out.String() != `{"events":12,"ok":false,"firstBad":4}`+"\n" {
		t.Fatalf("not ok: %q %v", out.String(), err)
	}
}

func TestRun_AuditNeedsASubcommandAndADatabase(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{{"audit"}, {"audit", "erase"}, {"audit", "verify", "now"}, {"audit", "list"}, {"audit", "verify"}} {
		var out bytes.Buffer
		err := run(ctx, args, envOf(nil), nil, &out)
		if err == nil || out.Len() > 0 {
			t.Errorf("%v: %v, printed %q", args, err, out.String())
		}
		if len(args) == 2 && (args[1] == "list" || args[1] == "verify") && !strings.Contains(err.Error(), "DATABASE_URL") {
			t.Errorf("%v: %v, want DATABASE_URL required", args, err)
		}
	}
}

func TestIntegrationAuditCommand_ListsAndVerifies(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	db, err := postgres.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	l, err := db.AuditLog(postgres.AuditConfig{})
	if err != nil {
		t.Fatal(err)
	}
	go l.Run()
	now := time.Now()
	const business = "6f1c2a9e-0d4b-4e8a-9c3f-5b7d1e2a4c60"
	events := []audit.Event{
		{At: now.Add(-48 * time.Hour), Actor: "alice", Action: audit.BlobUpload}, // before the default --since
		{At: now.Add(-5 * time.Hour), Actor: "alice", Action: audit.PatientSearch, Detail: map[string]any{"results": 1}},
		{At: now.Add(-4 * time.Hour), Actor: "bob", Action: audit.PatientSearch},
		{At: now.Add(-3 * time.Hour), Actor: "alice", Action: audit.BlobDownload, BusinessID: business},
		{At: now.Add(-2 * time.Hour), Actor: "", Action: audit.BlobDownload, Status: 401},
		{At: now.Add(-1 * time.Hour), Actor: "bob", Action: audit.AppointmentCancel},
	}
	for i, e := range events {
		e.RequestID, e.ResourceType = fmt.Sprintf("r%d", i+1), "x"
		if e.Status == 0 {
			e.Status = 200
		}
		e.Outcome = audit.OutcomeOf(e.Status)
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	getenv := envOf(map[string]string{"DATABASE_URL": url})

	list := func(args ...string) []int64 {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, append([]string{"audit", "list"}, args...), getenv, nil, &out); err != nil {
			t.Fatalf("list %v: %v", args, err)
		}
		ids := []int64{}
		for line := range strings.Lines(out.String()) {
			var e map[string]any
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if len(e) != 12 || len(e["hash"].(string)) != 64 {
				t.Fatalf("line %q", line)
			}
			ids = append(ids, int64(e["id"].(float64)))
		}
		return ids
	}
	for _, tt := range []struct {
		args []string
		want []int64
	}{
		{nil, []int64{2, 3, 4, 5, 6}},
		{[]string{"--since", "72h"}, []int64{1, 2, 3, 4, 5, 6}},
		{[]string{"--since", now.Add(-150 * time.Minute).Format(time.RFC3339)}, []int64{5, 6}},
		{[]string{"--actor", "alice"}, []int64{2, 4}},
		{[]string{"--action", "blob.download"}, []int64{4, 5}},
		{[]string{"--limit", "2"}, []int64{5, 6}},
		{[]string{"--since", "72h", "--actor", "alice", "--limit", "2"}, []int64{2, 4}},
		{[]string{"--business", business}, []int64{4}},
	} {
		if got := list(tt.args...); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("list %v: ids %v, want %v", tt.args, got, tt.want)
		}
	}

	verify := func() (string, error) {
		var out bytes.Buffer
		err := run(ctx, []string{"audit", "verify"}, getenv, nil, &out)
		return out.String(), err
	}
	if out, err := verify(); err != nil || out != `{"events":6,"ok":true}`+"\n" {
		t.Fatalf("verify: %q %v", out, err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"audit", "list", "--business", "biz-1"}, getenv, nil, &out); err == nil ||
		!strings.Contains(err.Error(), "not a UUID") || out.Len() > 0 {
		t.Fatalf("--business biz-1: %v, printed %q", err, out.String())
	}

	// An intruder with the superuser's powers rewrites event 3.
	err = pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE audit_events SET actor = 'carol' WHERE id = 3`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := verify(); err == nil || out != `{"events":6,"ok":false,"firstBad":3}`+"\n" {
		t.Fatalf("verify after tampering: %q %v", out, err)
	}
}
