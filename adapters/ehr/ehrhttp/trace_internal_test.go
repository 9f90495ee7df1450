package ehrhttp

import (
	"net/url"
	"testing"
)

func TestPathTemplate_KeepsTypesAndOperationsOnly(t *testing.T) {
	base, _ := url.Parse("https://ehr.example/fhir/r4")
	for raw, want := range map[string]string{
		"https://ehr.example/fhir/r4/Patient?family=Doe&birthdate=1970-01-01": "/Patient",
		"https://ehr.example/fhir/r4/Appointment/123":                         "/Appointment/{id}",
		"https://ehr.example/fhir/r4/Patient/Smith":                           "/Patient/{id}",
		"https://ehr.example/fhir/r4/Patient/p1/_history/3":                   "/Patient/{id}/_history/{id}",
		"https://ehr.example/fhir/r4/Patient/_search":                         "/Patient/_search",
		"https://ehr.example/fhir/r4/Patient/p1/$everything":                  "/Patient/{id}/$everything",
		"https://ehr.example/fhir/r4/Patient/p1/Appointment":                  "/Patient/{id}/Appointment",
		"https://ehr.example/fhir/r4?_getpages=abc&_page=2":                   "/",
		"https://ehr.example/fhir/r4/":                                        "/",
		"https://ehr.example/other/Patient":                                   "/{id}/{id}",
		"https://ehr.example/fhir/r4x/Patient":                                "/{id}/{id}/Patient",
		"https://ehr.example/fhir/r4/Doe%2C%20John/x":                         "/{id}/{id}",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := pathTemplate(base, u); got != want {
			t.Errorf("pathTemplate(%s) = %q, want %q", raw, got, want)
		}
	}
}
