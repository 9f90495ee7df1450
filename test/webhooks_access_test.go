package test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
)

// fakeDNS answers the names a test gives; any other name is not found.
type fakeDNS struct {
	mu    sync.Mutex
	names map[string]string
}

func (d *fakeDNS) set(name, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.names[name] = addr
}

func (d *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.names[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Owners and admins only; another practice's subscription is not there.
func TestIntegrationWebhooksAPI_OwnersAndAdminsOfTheActingBusinessOnly(t *testing.T) {
	w := newWorld(t)
	s := w.start(func(c *app.Config) { c.WebhookAllowPrivate = true })
	a, b := w.createBusiness("owner-a"), w.createBusiness("owner-b")
	ownerA, ownerB := w.token("owner-a"), w.token("owner-b")
	s.bdo("POST", "/business/"+a+"/members", ownerA, map[string]string{"subject": "staff-a", "role": "staff"}).
		data(t, 201, "Member added successfully")
	s.bdo("POST", "/business/"+a+"/members", ownerA, map[string]string{"subject": "admin-a", "role": "admin"}).
		data(t, 201, "Member added successfully")
	s.bdo("POST", "/business/"+b+"/members", ownerB, map[string]string{"subject": "owner-a", "role": "owner"}).
		data(t, 201, "Member added successfully")

	rc := newReceiver(t, nil)
	sub := hookAPI{s: s, tok: w.token("admin-a"), biz: a}.create(rc.url(), "*") // an admin may
	staff := hookAPI{s: s, tok: w.token("staff-a"), biz: a}
	for _, r := range []response{
		staff.do("GET", "", nil), staff.do("GET", "/"+sub.ID, nil),
		staff.do("POST", "", map[string]any{"url": rc.url(), "events": []string{"*"}}),
		staff.do("DELETE", "/"+sub.ID, nil),
	} {
		if r.status != 403 || r.errorCode(t) != "insufficient_role" {
			t.Errorf("staff: %d %s, want 403 insufficient_role", r.status, r.body)
		}
	}
	// owner-a is in two businesses: without X-Business-Id it acts for none.
	if r := (hookAPI{s: s, tok: ownerA}).do("GET", "", nil); r.status != 400 || r.errorCode(t) != "business_required" {
		t.Errorf("no acting business: %d %s", r.status, r.body)
	}
	// Practice B (its owner, or owner-a acting for B) sees nothing of A's.
	for _, api := range []hookAPI{{s: s, tok: ownerB, biz: b}, {s: s, tok: ownerA, biz: b}} {
		for _, r := range []response{
			api.do("GET", "/"+sub.ID, nil), api.do("PATCH", "/"+sub.ID, map[string]any{"enabled": false}),
			api.do("DELETE", "/"+sub.ID, nil), api.do("GET", "/"+sub.ID+"/deliveries", nil),
			api.do("POST", "/"+sub.ID+"/deliveries/1/retry", nil), api.do("POST", "/"+sub.ID+"/test", nil),
			api.do("POST", "/"+sub.ID+"/rotate-secret", nil),
			api.do("POST", "/"+sub.ID+"/replay", map[string]string{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
				"until": time.Now().UTC().Format(time.RFC3339)}),
		} {
			if r.status != 404 {
				t.Errorf("practice B on A's subscription: %d %s", r.status, r.body)
			}
		}
		var page struct{ TotalCount int }
		api.do("GET", "", nil).ok(t, 200, &page)
		if page.TotalCount != 0 {
			t.Errorf("practice B lists %d subscriptions", page.TotalCount)
		}
	}
	// owner-b naming A, of which it is no member.
	if r := (hookAPI{s: s, tok: ownerB, biz: a}).do("GET", "/"+sub.ID, nil); r.status != 404 {
		t.Errorf("a non-member naming A: %d %s", r.status, r.body)
	}
	var still webhookOut
	hookAPI{s: s, tok: ownerA, biz: a}.do("GET", "/"+sub.ID, nil).ok(t, 200, &still)
	if !still.Enabled {
		t.Fatal("practice B disabled A's subscription")
	}
}

// Request forgery: loopback, private and link-local targets, localhost and
// plain http are refused at creation; a name that resolves inside later
// (DNS rebinding) is refused at connection, and the log says so. The
// operator's CLI subscriptions may target loopback.
func TestIntegrationWebhooksAPI_RefusesRequestForgery(t *testing.T) {
	w := newWorld(t)
	h := newHooks(w)
	dns := &fakeDNS{names: map[string]string{"inside.example.test": "127.0.0.1", "rebind.example.test": "93.184.216.34"}}
	s := w.start(func(c *app.Config) { h.configure(c); fastEvents(c); c.WebhookResolver = dns })
	biz := w.createBusiness("owner-a")
	owner := w.token("owner-a")
	api := hookAPI{s: s, tok: owner, biz: biz}
	rc := newReceiver(t, nil)
	port := rc.srv.Listener.Addr().(*net.TCPAddr).Port

	for _, u := range []string{
		rc.url(), // http://127.0.0.1:port
		"http://hooks.example.com/x",
		"https://127.0.0.1/x", "https://10.0.0.5/x", "https://172.16.1.1/x", "https://192.168.1.1/x",
		"https://169.254.169.254/latest/meta-data", "https://0.0.0.0/x", "https://[::1]/x", "https://[fd00::1]/x",
		"https://[fe80::1]/x", "https://[::ffff:127.0.0.1]/x", "https://localhost/x", "https://api.localhost/x",
		fmt.Sprintf("https://inside.example.test:%d/hooks", port),
	} {
		r := api.do("POST", "", map[string]any{"url": u, "events": []string{"*"}})
		if r.status != 400 || r.errorCode(t) != "webhook_url_not_allowed" {
			t.Errorf("%s: %d %s, want 400 webhook_url_not_allowed", u, r.status, r.body)
		}
	}
	for _, body := range []map[string]any{
		{"url": "https://hooks.example.com/" + strings.Repeat("a", 2048), "events": []string{"*"}},
		{"url": "hooks.example.com", "events": []string{"*"}},
		{"url": "https://hooks.example.com/x", "events": []string{"appointment.exploded"}},
		{"url": "https://hooks.example.com/x", "events": []string{}},
	} {
		if r := api.do("POST", "", body); r.status != 400 {
			t.Errorf("%v: %d %s, want 400", body, r.status, r.body)
		}
	}

	// Public at creation, inside at connection.
	sub := api.create(fmt.Sprintf("https://rebind.example.test:%d/hooks", port), "business.updated")
	dns.set("rebind.example.test", "127.0.0.1")
	touch(s, biz, owner)
	var log []deliveryOut
	eventually(t, 10*time.Second, "a refused attempt logged", func() bool {
		log = api.deliveries(sub.ID, "")
		return len(log) == 1 && log[0].LastError != nil
	})
	if !strings.Contains(*log[0].LastError, "address not allowed") || !strings.Contains(*log[0].LastError, "127.0.0.1") {
		t.Errorf("lastError %q does not say the address was refused", *log[0].LastError)
	}
	if rc.requests() != 0 {
		t.Fatalf("the receiver inside was reached %d times", rc.requests())
	}

	// A URL changed by PATCH follows the same rules.
	if r := api.do("PATCH", "/"+sub.ID, map[string]any{"url": "https://10.1.2.3/x"}); r.status != 400 || r.errorCode(t) != "webhook_url_not_allowed" {
		t.Errorf("PATCH to a private address: %d %s", r.status, r.body)
	}

	// The operator's subscription to the same loopback receiver delivers.
	h.add(rc.url(), "*", "--business", biz)
	touch(s, biz, owner)
	eventually(t, 10*time.Second, "the operator's delivery", func() bool { return rc.count() >= 1 })
	if u, _ := url.Parse(rc.url()); u.Hostname() != "127.0.0.1" {
		t.Fatalf("receiver on %s", u.Host)
	}
}
