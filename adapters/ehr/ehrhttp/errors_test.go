package ehrhttp

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

func TestTranslator_GivesEachFailureItsCodeWithSecretsMasked(t *testing.T) {
	tr := translator{name: "ehr-a", secrets: []string{"s3cret"}}
	cause := &url.Error{Op: "Get", URL: "https://ehr.example/?q=s3cret", Err: errors.New("dial s3cret")}
	tests := []struct {
		err  error
		kind core.Kind
		code string
	}{
		{&failure{kind: failNetwork, err: cause}, core.KindBadGateway, "ehr_unreachable"},
		{&failure{kind: failTimeout, err: cause}, core.KindTimeout, "ehr_timeout"},
		{&failure{kind: failLimited, wait: time.Second, err: errors.New("turn s3cret")}, core.KindRateLimited, "rate_limited"},
		{&failure{kind: failAuth, err: errors.New("token s3cret")}, core.KindBadGateway, "ehr_auth_failed"},
		{&failure{kind: failCaller, err: context.Canceled}, core.KindTimeout, "ehr_timeout"},
		{&failure{kind: failBody, err: errors.New("body s3cret")}, core.KindInternal, "internal_error"},
		{errors.New("other s3cret"), core.KindBadGateway, "ehr_unreachable"},
		{&core.Error{Kind: core.KindUnavailable, Code: "circuit_open"}, core.KindUnavailable, "circuit_open"},
	}
	for _, tt := range tests {
		var ce *core.Error
		err := tr.coreError(context.Background(), tt.err)
		if !errors.As(err, &ce) || ce.Kind != tt.kind || ce.Code != tt.code {
			t.Errorf("%v: got %v, want %v %s", tt.err, err, tt.kind, tt.code)
			continue
		}
		if ce.Err != nil && strings.Contains(ce.Err.Error(), "s3cret") || strings.Contains(ce.Message, "s3cret") {
			t.Errorf("%v: the secret shows in %q / %v", tt.err, ce.Message, ce.Err)
		}
		if ce.Err != nil && strings.Contains(ce.Err.Error(), "ehr.example") {
			t.Errorf("%v: the URL shows in %v", tt.err, ce.Err)
		}
	}
}
