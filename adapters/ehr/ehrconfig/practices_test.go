package ehrconfig

import (
	"slices"
	"strings"
	"testing"
)

const (
	bizA = "6f1c2a3e-0000-4000-8000-00000000000a"
	bizB = "6f1c2a3e-0000-4000-8000-00000000000b"
	bizC = "6f1c2a3e-0000-4000-8000-00000000000c"
)

// practicesFile is two systems, clinic-a for bizA and shared (every
// business), with integration.ehr shared; tail is appended to the
// integration section.
func practicesFile(aBusinesses, tail string) []byte {
	return []byte(`
ehr_systems:
  - {name: clinic-a, adapter: fhir, base_url: 'https://a.example/fhir', businesses: ` + aBusinesses + `}
  - {name: shared, adapter: fhir, base_url: 'https://s.example/fhir'}
integration:
  ehr: shared
` + tail)
}

func TestParse_BusinessesAndByBusiness(t *testing.T) {
	tests := []struct {
		name       string
		businesses string
		tail       string
		want       string // "" = valid
	}{
		{"businesses and by_business", "[" + bizA + "]", "  by_business: {" + bizA + ": clinic-a}\n", ""},
		{"upper-case UUIDs", "[" + strings.ToUpper(bizA) + "]", "  by_business: {" + strings.ToUpper(bizA) + ": clinic-a}\n", ""},
		{"by_business to a system serving every business", "[" + bizA + "]", "  by_business: {" + bizB + ": shared}\n", ""},
		{"businesses entry not a UUID", "[" + bizA + ", main-campus]", "",
			`ehr_systems[0] clinic-a: businesses[1]: "main-campus" is not a business UUID`},
		{"businesses entry a UUID without dashes", "[6f1c2a3e000040008000000000000000]", "", "businesses[0]: "},
		{"businesses entry not a string", "[{id: 1}]", "", "EHR systems file"},
		{"businesses empty", "[]", "", "ehr_systems[0] clinic-a: businesses: must name at least one business"},
		{"businesses duplicate", "[" + bizA + ", " + strings.ToUpper(bizA) + "]", "", "ehr_systems[0] clinic-a: businesses[1]: duplicate"},
		{"by_business names an unknown system", "[" + bizA + "]", "  by_business: {" + bizA + ": clinic-z}\n",
			`integration.by_business[` + bizA + `]: names no system in ehr_systems ("clinic-z")`},
		{"by_business system does not serve the business", "[" + bizA + "]", "  by_business: {" + bizB + ": clinic-a}\n",
			"integration.by_business[" + bizB + "]: system clinic-a does not serve this business"},
		{"by_business key not a UUID", "[" + bizA + "]", "  by_business: {clinic-a: clinic-a}\n",
			`integration.by_business: "clinic-a" is not a business UUID`},
		{"by_business same business twice", "[" + bizA + "]", "  by_business: {" + bizA + ": clinic-a, " + strings.ToUpper(bizA) + ": shared}\n",
			"integration.by_business[" + bizA + "]: duplicate"},
		{"by_business empty name", "[" + bizA + "]", "  by_business: {" + bizA + ": ''}\n", "must name a system"},
		{"by_business unknown key", "[" + bizA + "]", "  by_businesses: {" + bizA + ": clinic-a}\n", "by_businesses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := practicesFile(tt.businesses, tt.tail)
			cfg, err := Parse(testAdapters, data, nil, nil)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v\n%s", err, data)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tt.want)
			}
			if cfg != nil {
				t.Error("a config returned with an error")
			}
		})
	}
}

func TestConfig_ServesAndIntegrationFor(t *testing.T) {
	cfg := mustParse(t, practicesFile("["+strings.ToUpper(bizA)+", "+bizC+"]", "  by_business: {"+bizC+": clinic-a}\n"))
	if got := cfg.Systems[0].Businesses; !slices.Equal(got, []string{bizA, bizC}) {
		t.Fatalf("businesses %v, want them in lower case", got)
	}
	if !cfg.MultiPractice() {
		t.Error("a file with businesses is not multi-practice")
	}
	serves := []struct {
		system, business string
		want             bool
	}{
		{"clinic-a", bizA, true},
		{"clinic-a", strings.ToUpper(bizA), true},
		{"clinic-a", bizB, false},
		{"shared", bizB, true},
		{"nowhere", bizA, false},
	}
	for _, s := range serves {
		if got := cfg.Serves(s.system, s.business); got != s.want {
			t.Errorf("Serves(%s, %s) = %v", s.system, s.business, got)
		}
	}
	integration := []struct {
		business, want string
		ok             bool
	}{
		{bizC, "clinic-a", true},                  // by_business
		{strings.ToUpper(bizC), "clinic-a", true}, // any case
		{bizA, "shared", true},                    // integration.ehr serves every business
	}
	for _, c := range integration {
		if got, ok := cfg.IntegrationFor(c.business); got != c.want || ok != c.ok {
			t.Errorf("IntegrationFor(%s) = %q, %v; want %q, %v", c.business, got, ok, c.want, c.ok)
		}
	}

	// integration.ehr bound to other businesses is no business's fallback.
	bound := mustParse(t, []byte(`
ehr_systems:
  - {name: clinic-a, adapter: fhir, base_url: 'https://a.example/fhir', businesses: [`+bizA+`]}
integration: {ehr: clinic-a}
`))
	if got, ok := bound.IntegrationFor(bizB); ok {
		t.Errorf("IntegrationFor(another business) = %q; want none", got)
	}
	if got, ok := bound.IntegrationFor(bizA); !ok || got != "clinic-a" {
		t.Errorf("IntegrationFor(its business) = %q, %v", got, ok)
	}
}

func TestConfig_WithoutBusinessesIsSinglePractice(t *testing.T) {
	cfg := mustParse(t, []byte("ehr_systems:\n  - {name: a, adapter: fhir, base_url: 'https://a.example/'}\nintegration: {ehr: a}\n"))
	if cfg.MultiPractice() {
		t.Error("a file without businesses is multi-practice")
	}
	if cfg.Systems[0].Businesses != nil || cfg.Integration.ByBusiness != nil {
		t.Errorf("businesses %v, by_business %v; want none", cfg.Systems[0].Businesses, cfg.Integration.ByBusiness)
	}
	if !cfg.Serves("a", bizA) {
		t.Error("a system without businesses does not serve every business")
	}
	if got, ok := cfg.IntegrationFor(bizB); !ok || got != "a" {
		t.Errorf("IntegrationFor = %q, %v; want integration.ehr", got, ok)
	}
	none := mustParse(t, []byte("ehr_systems:\n  - {name: a, adapter: fhir, base_url: 'https://a.example/'}\n"))
	if got, ok := none.IntegrationFor(bizA); ok {
		t.Errorf("IntegrationFor without integration = %q", got)
	}
}
