package audit

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Tally counts the requests refused for want of valid credentials (401) so
// that the trail records them at most once per client network (an IPv4
// address, an IPv6 /64: one host holds a whole /64), action and minute: one event, the first refusal's, with detail.count saying how many
// it stands for. Anonymous traffic then neither fills the trail nor waits
// for it. Its memory is bounded: it tracks at most max groups; a refusal
// that would start another joins its action's overflow group, which
// stands for every address. It is safe for concurrent use.
type Tally struct {
	mu     sync.Mutex
	max    int
	groups map[tallyKey]*Group
}

type tallyKey struct {
	addr   string
	action Action
	minute time.Time // zero: the action's overflow group
}

// Group is refusals counted together, as Take hands them out.
type Group struct {
	key   tallyKey
	first Event
	count int
}

// Count is how many refusals the group stands for.
func (g Group) Count() int { return g.count }

// Event is the group's event: its first refusal's, with detail.count.
func (g Group) Event() Event {
	e := g.first
	e.Detail = map[string]any{"count": g.count}
	return e
}

// NewTally returns a tally of at most limit groups (at least 1) besides
// the overflow groups.
func NewTally(limit int) *Tally {
	return &Tally{max: max(limit, 1), groups: map[tallyKey]*Group{}}
}

// Add counts one refusal of a request from addr; e is its event, whose At
// places it in its minute.
func (t *Tally) Add(addr string, e Event) {
	t.add(tallyKey{addr: network(addr), action: e.Action, minute: e.At.Truncate(time.Minute)}, e, 1)
}

// network is the network a client address is counted by: an IPv6
// address's /64, else the address itself (IPv4, an IPv4-mapped IPv6
// address as IPv4, or what is not an address).
func network(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is6() {
		return netip.PrefixFrom(ip.WithZone(""), 64).Masked().String()
	}
	return ip.String()
}

func (t *Tally) add(k tallyKey, first Event, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.groups[k]
	if !ok && len(t.groups) >= t.max {
		k = tallyKey{action: first.Action}
		g, ok = t.groups[k]
	}
	if !ok {
		g = &Group{key: k, first: first}
		t.groups[k] = g
	}
	g.count += n
}

// Take removes and returns, oldest first, the groups whose minute is over
// at now (for an overflow group, the minute of its first refusal); a zero
// now takes every group.
func (t *Tally) Take(now time.Time) []Group {
	t.mu.Lock()
	var out []Group
	for k, g := range t.groups {
		if now.IsZero() || !now.Before(g.first.At.Truncate(time.Minute).Add(time.Minute)) {
			out = append(out, *g)
			delete(t.groups, k)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(a.first.At.Compare(b.first.At), cmp.Compare(a.first.RequestID, b.first.RequestID))
	})
	return out
}

// Return puts back groups taken but not recorded, to be taken again.
func (t *Tally) Return(groups []Group) {
	for _, g := range groups {
		t.add(g.key, g.first, g.count)
	}
}
