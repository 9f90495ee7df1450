package audit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/audit"
)

// refusal is the event of one request refused with 401 at at.
func refusal(action audit.Action, at time.Time, id string) audit.Event {
	return audit.Event{At: at, RequestID: id, Action: action, ResourceType: "blob", Outcome: audit.Denied, Status: 401}
}

// counts sums detail.count by action over events.
func counts(groups []audit.Group) map[audit.Action]int {
	out := map[audit.Action]int{}
	for _, g := range groups {
		out[g.Event().Action] += g.Event().Detail["count"].(int)
	}
	return out
}

func TestTally_OneEventPerAddressActionAndMinute(t *testing.T) {
	minute := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	tally := audit.NewTally(100)
	for i := range 5 {
		tally.Add("10.0.0.1", refusal(audit.BlobDownload, minute.Add(time.Duration(i)*time.Second), fmt.Sprint("a", i)))
	}
	tally.Add("10.0.0.2", refusal(audit.BlobDownload, minute.Add(10*time.Second), "b0"))
	tally.Add("10.0.0.1", refusal(audit.PatientSearch, minute.Add(20*time.Second), "c0"))
	tally.Add("10.0.0.1", refusal(audit.BlobDownload, minute.Add(70*time.Second), "d0")) // the next minute

	if got := tally.Take(minute.Add(59 * time.Second)); len(got) != 0 {
		t.Fatalf("taken before the minute is over: %+v", got)
	}
	got := tally.Take(minute.Add(time.Minute))
	if len(got) != 3 {
		t.Fatalf("%d groups, want 3: %+v", len(got), got)
	}
	want := []struct {
		requestID string
		count     int
	}{{"a0", 5}, {"b0", 1}, {"c0", 1}}
	for i, g := range got {
		e := g.Event()
		if e.RequestID != want[i].requestID || e.Detail["count"] != want[i].count || !e.At.Equal(minute.Add(time.Duration(i*10)*time.Second)) ||
			e.Status != 401 || e.Outcome != audit.Denied || e.Actor != "" {
			t.Errorf("group %d: %+v, want the first refusal %s with count %d", i, e, want[i].requestID, want[i].count)
		}
	}
	rest := tally.Take(time.Time{}) // shutdown: everything
	if len(rest) != 1 || rest[0].Event().RequestID != "d0" || len(tally.Take(time.Time{})) != 0 {
		t.Fatalf("the rest: %+v", rest)
	}
}

// One host may hold a whole IPv6 /64: its addresses are one client.
func TestTally_AnIPv6SlashSixtyFourIsOneClient(t *testing.T) {
	minute := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	tally := audit.NewTally(100)
	for i := range 1000 {
		tally.Add(fmt.Sprintf("2001:db8:1:2:%x::%x", i, i), refusal(audit.BlobDownload, minute, fmt.Sprint("a", i)))
	}
	tally.Add("2001:db8:1:3::1", refusal(audit.BlobDownload, minute, "other"))
	tally.Add("::ffff:10.0.0.1", refusal(audit.BlobDownload, minute, "v4"))
	tally.Add("10.0.0.1", refusal(audit.BlobDownload, minute, "v4again"))
	got := tally.Take(time.Time{})
	n := map[string]int{}
	for _, g := range got {
		n[g.Event().RequestID] = g.Count()
	}
	if len(got) != 3 || n["a0"] != 1000 || n["other"] != 1 || n["v4"] != 2 {
		t.Fatalf("groups %v, want one of 1000 for the /64, one for another /64, one of 2 for the IPv4 address", n)
	}
}

func TestTally_BoundedByItsLimitWithOverflowPerAction(t *testing.T) {
	at := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	tally := audit.NewTally(10)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				addr := fmt.Sprintf("10.%d.%d.1", g, i) // 4,000 addresses
				tally.Add(addr, refusal(audit.BlobMetadata, at, addr))
				tally.Add(addr, refusal(audit.PatientSearch, at, addr))
			}
		})
	}
	wg.Wait()
	got := tally.Take(time.Time{})
	if len(got) > 10+2 {
		t.Fatalf("%d groups tracked, want at most 10 and one overflow group per action", len(got))
	}
	if c := counts(got); c[audit.BlobMetadata] != 4000 || c[audit.PatientSearch] != 4000 {
		t.Fatalf("counts %v, want 4000 each", c)
	}
}

func TestTally_GroupsReturnedAfterAFailedWriteAreTakenAgain(t *testing.T) {
	at := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	tally := audit.NewTally(2)
	tally.Add("a", refusal(audit.BlobUpload, at, "r1"))
	tally.Add("a", refusal(audit.BlobUpload, at, "r2"))
	taken := tally.Take(time.Time{})
	tally.Add("a", refusal(audit.BlobUpload, at.Add(time.Second), "r3")) // meanwhile
	tally.Add("b", refusal(audit.BlobUpload, at, "r4"))
	tally.Add("c", refusal(audit.BlobUpload, at, "r5")) // over the limit: overflow
	tally.Return(taken)
	got := tally.Take(time.Time{})
	if c := counts(got); c[audit.BlobUpload] != 5 {
		t.Fatalf("counts %v, want 5", c)
	}
	if len(got) != 3 {
		t.Fatalf("%d groups, want a, b and the overflow: %+v", len(got), got)
	}
}

func TestPending_IsHandedOutUntilCommitted(t *testing.T) {
	ctx := context.Background()
	if audit.PendingFrom(ctx) != nil {
		t.Fatal("a pending event in an empty context")
	}
	p := &audit.Pending{Event: audit.Event{Action: audit.BlobDelete, Status: 200, Outcome: audit.Success}}
	ctx = audit.WithPending(ctx, p)
	if got := audit.PendingFrom(ctx); got != p || p.Committed() {
		t.Fatalf("PendingFrom: %v", got)
	}
	p.MarkCommitted()
	if audit.PendingFrom(ctx) != nil || !p.Committed() {
		t.Fatal("a committed event is handed out again")
	}
}
