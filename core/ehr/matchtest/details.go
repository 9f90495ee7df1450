package matchtest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// place decides in which systems p has records and how each is written.
func (g *gen) place(p *person, perSystem [][]draft) {
	k := 3
	switch u := g.r.Float64(); {
	case u < g.c.OneSystem:
		k = 1
	case u < g.c.OneSystem+g.c.TwoSystems:
		k = 2
	}
	systems := g.r.Perm(len(Systems))[:k]
	if g.chance(g.c.Duplicate) {
		systems = append(systems, systems[0])
	}
	married, moved, movedPhone := -1, -1, false
	if p.Married != "" {
		married = g.r.IntN(len(systems))
		if len(systems) == 1 && g.chance(0.5) {
			married = -1
		}
	}
	if len(systems) > 1 && g.chance(g.c.Moved) {
		moved, movedPhone = g.r.IntN(len(systems)), g.chance(0.5)
	}
	for i, s := range systems {
		rec, f := g.write(p, i == married, i == moved, i == moved && movedPhone)
		perSystem[s] = append(perSystem[s], draft{rec: rec, f: f})
	}
}

// patientID is the k-th record id of system s, in that system's style.
func patientID(r *rand.Rand, s, k int) string {
	switch s {
	case 0:
		return fmt.Sprintf("pat-%06d", k+1)
	case 1:
		return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Uint64()&(1<<48-1))
	default:
		return fmt.Sprintf("%d", 100000+k*7)
	}
}

// mrn is a fresh medical record number of system s, in its style.
func (g *gen) mrn(s int, seen map[string]bool) string {
	for {
		var v string
		switch s {
		case 0:
			v = fmt.Sprintf("A%07d", g.r.IntN(10_000_000))
		case 1:
			v = fmt.Sprintf("MRN-%06d", g.r.IntN(1_000_000))
		default:
			v = fmt.Sprintf("%08d", 10_000_000+g.r.IntN(90_000_000))
		}
		if !seen[v] {
			seen[v] = true
			return v
		}
	}
}

func (g *gen) address(pl place) address {
	a := address{
		number: 1 + g.r.IntN(9899), direction: -1, street: streets[g.r.IntN(len(streets))],
		stype: g.r.IntN(len(streetTypes)), place: pl,
		zip: pl.zip3 + fmt.Sprintf("%02d", g.r.IntN(100)), plus4: fmt.Sprintf("%04d", g.r.IntN(10000)),
	}
	if g.chance(0.1) {
		a.direction = g.r.IntN(len(directions))
	}
	if g.chance(0.15) {
		a.unit = []string{"Apt ", "Unit ", "# ", "Suite "}[g.r.IntN(4)] + fmt.Sprintf("%d%s", 1+g.r.IntN(30), []string{"", "A", "B", "C"}[g.r.IntN(4)])
	}
	return a
}

// phone is a ten-digit national number in pl's area code.
func (g *gen) phone(pl place) string {
	return fmt.Sprintf("%s%d%02d%04d", pl.area, 2+g.r.IntN(8), g.r.IntN(100), g.r.IntN(10000))
}

func (g *gen) email(given, family string) string {
	local := strings.ToLower(plain(given))
	switch g.r.IntN(4) {
	case 0:
		local += "." + strings.ToLower(plain(family))
	case 1:
		local = local[:1] + strings.ToLower(plain(family))
	case 2:
		local += "_" + strings.ToLower(plain(family))
	default:
		local += strings.ToLower(plain(family))
	}
	if g.chance(0.6) {
		local += fmt.Sprintf("%d", g.r.IntN(100))
	}
	return local + "@" + mailDomains[g.r.IntN(len(mailDomains))]
}

func (g *gen) ssn() string {
	area := 1 + g.r.IntN(665)
	return fmt.Sprintf("%03d-%02d-%04d", area, 1+g.r.IntN(99), 1+g.r.IntN(9999))
}

// plain is s with accents folded and only its letters (the generator's own
// reading, for e-mail addresses and its name distances).
func plain(s string) string {
	var b strings.Builder
	for _, r := range s {
		if f, ok := fold[r]; ok {
			b.WriteString(f)
		} else if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// distance is the optimal-string-alignment edit distance of a and b, case
// ignored (a transposition of neighbours counts one).
func distance(a, b string) int {
	x, y := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
