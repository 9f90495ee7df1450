package auth

import (
	"fmt"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

func actor(sub string) core.Actor { return core.Actor{Subject: sub} }

func TestTokenCache_TrustsForAtMostTheTTLAndNeverPastExpiry(t *testing.T) {
	now := time.Now()
	c := newTokenCache(time.Minute)
	c.put("long", actor("alice"), now.Add(time.Hour), now)
	c.put("short", actor("bob"), now.Add(10*time.Second), now)
	for _, tt := range []struct {
		raw  string
		at   time.Duration
		want string
	}{
		{"long", 59 * time.Second, "alice"},
		{"long", 60 * time.Second, ""},
		{"short", 9 * time.Second, "bob"},
		{"short", 10 * time.Second, ""},
		{"other", 0, ""},
	} {
		got, ok := c.get(tt.raw, now.Add(tt.at))
		if got.Subject != tt.want || ok != (tt.want != "") {
			t.Errorf("get(%s) at +%v = %q, %v; want %q", tt.raw, tt.at, got.Subject, ok, tt.want)
		}
	}
	if _, ok := newTokenCache(0).get("long", now); ok {
		t.Error("a disabled cache answered")
	}
	newTokenCache(0).put("x", actor("y"), now.Add(time.Hour), now) // a nil cache ignores puts
}

func TestTokenCache_StaysBounded(t *testing.T) {
	now := time.Now()
	c := newTokenCache(time.Minute)
	for i := range maxCachedTokens + 100 {
		c.put(fmt.Sprint(i), actor("s"), now.Add(time.Hour), now)
	}
	if len(c.entries) > maxCachedTokens {
		t.Fatalf("%d entries", len(c.entries))
	}
	if _, ok := c.get(fmt.Sprint(maxCachedTokens+99), now); !ok {
		t.Fatal("the newest token is not cached")
	}
}
