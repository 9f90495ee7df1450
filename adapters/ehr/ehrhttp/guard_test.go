package ehrhttp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/carebridge/carebridge/core"
)

func TestGuard_SendsOnlyToTheSystemsOrigin(t *testing.T) {
	base, _ := url.Parse("https://ehr.example:443/fhir")
	d := guard(base, translator{name: "ehr-a"})(func(context.Context, *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200}, nil
	})
	for target, ok := range map[string]bool{
		"https://ehr.example/fhir/Patient": true,
		"https://EHR.example:443/other":    true,
		"http://ehr.example/fhir":          false,
		"https://ehr.example:8443/fhir":    false,
		"https://evil.example/fhir":        false,
		"https://user:pw@ehr.example/fhir": false,
		"/fhir/Patient":                    false,
	} {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		_, err := d(context.Background(), req)
		var ce *core.Error
		if ok != (err == nil) || !ok && (!errors.As(err, &ce) || ce.Code != "ehr_request_refused") {
			t.Errorf("%s: err %v, want sent %v", target, err, ok)
		}
	}
	if _, err := d(context.Background(), nil); err == nil {
		t.Error("a nil request was not refused")
	}
}
