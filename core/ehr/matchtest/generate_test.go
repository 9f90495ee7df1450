package matchtest

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/core/ehr"
)

func TestGenerate_SameSeedSameOutput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		seed   uint64
		people int
	}{
		{"small", 1, 50},
		{"medium", 42, 1500},
		{"another seed", 0xdecaf, 800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := Generate(tc.seed, tc.people), Generate(tc.seed, tc.people)
			if !reflect.DeepEqual(a, b) {
				t.Fatal("the same seed gave two populations")
			}
			if len(a.People) != tc.people {
				t.Errorf("people = %d, want %d", len(a.People), tc.people)
			}
			if c := Generate(tc.seed+1, tc.people); reflect.DeepEqual(a.Records, c.Records) {
				t.Error("another seed gave the same records")
			}
		})
	}
}

func has(r ehr.Patient, system string) bool {
	for _, c := range r.Telecom {
		if c.System == system {
			return true
		}
	}
	return false
}

// TestGenerate_Rates checks the generator's stated rates on the records
// themselves (not on its own bookkeeping).
func TestGenerate_Rates(t *testing.T) {
	pop := Generate(7, 3000)
	n := float64(len(pop.Records))
	share := func(missing func(ehr.Patient) bool) float64 {
		k := 0
		for _, r := range pop.Records {
			if missing(r) {
				k++
			}
		}
		return float64(k) / n
	}
	for _, tc := range []struct {
		field    string
		missing  func(ehr.Patient) bool
		min, max float64
	}{
		{"phone", func(r ehr.Patient) bool { return !has(r, "phone") }, 0.10, 0.20},
		{"email", func(r ehr.Patient) bool { return !has(r, "email") }, 0.10, 0.20},
		{"address", func(r ehr.Patient) bool { return len(r.Address) == 0 }, 0.10, 0.20},
		{"birth date", func(r ehr.Patient) bool { return r.BirthDate == "" }, 0.10, 0.20},
		{"gender", func(r ehr.Patient) bool { return r.Gender == "" }, 0.10, 0.20},
		{"given name", func(r ehr.Patient) bool { return len(r.Name.Given) == 0 }, 0.005, 0.05},
	} {
		t.Run("missing "+tc.field, func(t *testing.T) {
			if got := share(tc.missing); got < tc.min || got > tc.max {
				t.Errorf("%s missing in %.3f of the records, want %.2f to %.2f", tc.field, got, tc.min, tc.max)
			} else {
				t.Logf("%s missing in %.3f of the records", tc.field, got)
			}
		})
	}

	t.Run("hard negatives", func(t *testing.T) {
		in := map[Kind]map[int]bool{}
		all := map[int]bool{}
		for _, h := range pop.HardNegatives {
			if in[h.Kind] == nil {
				in[h.Kind] = map[int]bool{}
			}
			in[h.Kind][h.A], in[h.Kind][h.B], all[h.A], all[h.B] = true, true, true, true
		}
		people := float64(len(pop.People))
		if got := float64(len(all)) / people; got < 0.05 {
			t.Errorf("%.3f of the people are in a hard negative, want at least 0.05", got)
		} else {
			t.Logf("%.3f of the people are in a hard negative", got)
		}
		for _, k := range Kinds {
			if got := float64(len(in[k])) / people; got < 0.01 {
				t.Errorf("%.3f of the people are in a hard negative of kind %s, want at least 0.01", got, k)
			} else {
				t.Logf("%s: %.3f of the people", k, got)
			}
		}
	})

	t.Run("systems and shared identifiers", func(t *testing.T) {
		systems := map[int]map[string]bool{}
		ssn := map[int]bool{}
		for _, r := range pop.Records {
			p := pop.Truth[ehr.SourceRef{Source: r.Source, PatientID: r.ID}]
			if systems[p] == nil {
				systems[p] = map[string]bool{}
			}
			systems[p][r.Source] = true
			for _, id := range r.Identifiers {
				if id.System == SSNSystem {
					ssn[p] = true
				}
			}
		}
		count := [4]int{}
		for _, s := range systems {
			count[len(s)]++
		}
		if len(systems) != len(pop.People) || count[1] == 0 || count[2] == 0 || count[3] == 0 {
			t.Errorf("people in 1, 2, 3 systems: %v of %d", count[1:], len(pop.People))
		}
		if got := float64(len(ssn)) / float64(len(pop.People)); got < 0.15 || got > 0.35 {
			t.Errorf("%.3f of the people have an SSN in a record, want 0.15 to 0.35", got)
		}
	})
}

// TestGenerate_Records checks each record's shape: its source, an id and
// an MRN of its system unique in that system, its truth.
func TestGenerate_Records(t *testing.T) {
	pop := Generate(3, 2000)
	ids, mrns := map[string]bool{}, map[string]bool{}
	for _, r := range pop.Records {
		if r.Source != "ehr-a" && r.Source != "ehr-b" && r.Source != "ehr-c" {
			t.Fatalf("source %q", r.Source)
		}
		if ids[r.Source+" "+r.ID] {
			t.Fatalf("id %s twice in %s", r.ID, r.Source)
		}
		ids[r.Source+" "+r.ID] = true
		if _, ok := pop.Truth[ehr.SourceRef{Source: r.Source, PatientID: r.ID}]; !ok {
			t.Fatalf("%s/%s has no truth", r.Source, r.ID)
		}
		own := 0
		for _, id := range r.Identifiers {
			if id.System == "urn:carebridge:"+r.Source+":mrn" && id.Type == "MR" {
				own++
				if mrns[r.Source+" "+id.Value] {
					t.Fatalf("MRN %s twice in %s", id.Value, r.Source)
				}
				mrns[r.Source+" "+id.Value] = true
			}
		}
		if own != 1 {
			t.Fatalf("%s/%s has %d MRNs of its system", r.Source, r.ID, own)
		}
		if r.BirthDate != "" && (r.BirthDate < "1930" || r.BirthDate >= "2030") {
			t.Fatalf("birth date %s", r.BirthDate)
		}
	}
	if len(pop.Truth) != len(pop.Records) {
		t.Errorf("truth of %d records, %d records", len(pop.Truth), len(pop.Records))
	}
}

// TestGenerate_HardNegativesAreWhatTheySay checks the true people of each
// hard negative.
func TestGenerate_HardNegativesAreWhatTheySay(t *testing.T) {
	pop := Generate(11, 3000)
	for _, h := range pop.HardNegatives {
		a, b := pop.People[h.A], pop.People[h.B]
		if a.Family != b.Family {
			t.Errorf("%s %d/%d: families %q and %q", h.Kind, h.A, h.B, a.Family, b.Family)
		}
		switch h.Kind {
		case Twins:
			if a.Birth != b.Birth || distance(plain(a.Given), plain(b.Given)) < 3 {
				t.Errorf("twins %+v %+v", a, b)
			}
		case JrSr:
			if a.Given != b.Given || a.Birth == b.Birth || a.Suffix+b.Suffix != "SrJr" {
				t.Errorf("jr-sr %+v %+v", a, b)
			}
		case Household:
			if a.Birth[:4] == b.Birth[:4] || distance(plain(a.Given), plain(b.Given)) < 3 {
				t.Errorf("household %+v %+v", a, b)
			}
		case Namesake:
			if a.Given != b.Given || a.Birth != b.Birth {
				t.Errorf("namesakes %+v %+v", a, b)
			}
		default:
			t.Errorf("kind %q", h.Kind)
		}
	}
}

func TestTypo_OneEdit(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(1, 2))}
	for _, name := range []string{"Elizabeth", "Smith", "De La Cruz", "López", "Ann"} {
		for range 200 {
			got := g.typo(name)
			if d := distance(name, got); d != 1 {
				t.Fatalf("typo(%q) = %q, %d edits", name, got, d)
			}
			if strings.EqualFold(got, name) {
				t.Fatalf("typo(%q) = %q", name, got)
			}
		}
	}
}
