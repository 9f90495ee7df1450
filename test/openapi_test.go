package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"

	"github.com/carebridge/carebridge/adapters/httpapi"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// apiDocument is a validator of the served OpenAPI document, built once per
// test binary and shared by the tests' goroutines (the validator is safe for
// concurrent use; the -race runs of the audit tests call it from several).
var apiDocument = sync.OnceValues(func() (validator.Validator, error) {
	doc, err := libopenapi.NewDocument(httpapi.OpenAPIDocument())
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions(), config.WithStandardBodyDecoders())
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapi validator: %v", errs)
	}
	return v, nil
})

// undocumentedPath reports the paths the document leaves out, as the
// contract allows: probes, metrics and the documentation itself.
func undocumentedPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs":
		return true
	}
	return strings.HasPrefix(path, "/docs/")
}

// checkDocumented fails the test when the answer to req is not what the
// OpenAPI document says the operation answers: an undocumented status,
// content type, body shape or a missing required header. A download's
// body is the file's bytes; its status and headers are checked. Answers of
// the router to paths or methods it does not serve (route_not_found,
// method_not_allowed) are outside every operation and are only checked to
// be the error envelope.
func (s *server) checkDocumented(req *http.Request, resp *http.Response, body []byte) {
	s.t.Helper()
	if undocumentedPath(req.URL.Path) {
		return
	}
	v, err := apiDocument()
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		var e struct {
			Message, Status, Code string
			Data                  json.RawMessage
		}
		if json.Unmarshal(body, &e) == nil && (e.Code == "route_not_found" || e.Code == "method_not_allowed") {
			if e.Message == "" || e.Status != "error" || string(e.Data) != "null" ||
				resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Request-Id") == "" {
				s.t.Errorf("%s %s: %d %s is not the error envelope", req.Method, req.URL.Path, resp.StatusCode, body)
			}
			return
		}
	}
	checked := *resp
	checked.Body = io.NopCloser(bytes.NewReader(body))
	validate := v.ValidateHttpResponse
	if resp.StatusCode < 300 && (req.Body == nil || req.GetBody != nil) {
		// An accepted request must be one the document allows too.
		sent := req.Clone(req.Context())
		if req.GetBody != nil {
			if sent.Body, err = req.GetBody(); err != nil {
				s.t.Fatal(err)
			}
		}
		req, validate = sent, v.ValidateHttpRequestResponse
	}
	if ok, errs := validate(req, &checked); !ok {
		var msg strings.Builder
		for _, e := range errs {
			fmt.Fprintf(&msg, "\n  %s: %s", e.Message, e.Reason)
			for _, f := range e.SchemaValidationErrors {
				fmt.Fprintf(&msg, "\n    %s at %s", f.Reason, f.FieldPath)
			}
		}
		s.t.Errorf("%s %s answered %d, not as openapi.yaml documents it:%s\n  body: %.300s",
			req.Method, req.URL.Path, resp.StatusCode, msg.String(), body)
	}
}

// documentedOperation is what the scope test reads of one operation.
type documentedOperation struct {
	method, path string
	security     []map[string][]string
	scoped       bool // has x-required-scopes
	jsonBody     bool
}

func documentedOperations(t *testing.T) []documentedOperation {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(httpapi.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	var ops []documentedOperation
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			var op struct {
				Security       []map[string][]string `json:"security"`
				RequiredScopes json.RawMessage       `json:"x-required-scopes"`
				RequestBody    struct {
					Content map[string]json.RawMessage `json:"content"`
				} `json:"requestBody"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			_, jsonBody := op.RequestBody.Content["application/json"]
			ops = append(ops, documentedOperation{method: strings.ToUpper(method), path: path,
				security: op.Security, scoped: op.RequiredScopes != nil, jsonBody: jsonBody})
		}
	}
	return ops
}

// TestOpenAPI_ScopesAreTheDocumentedOnes calls every documented operation
// with a token without scopes: those that list x-required-scopes answer 403
// insufficient_scope naming a scope of their security requirement, and a
// token with that scope is not refused for want of a scope; the others
// never ask for a scope.
func TestOpenAPI_ScopesAreTheDocumentedOnes(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	scopeless := w.scopedToken("u", "openid")
	call := func(op documentedOperation, tok string) response {
		path := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(op.path, "x")
		if op.jsonBody {
			return s.do(op.method, path, tok, strings.NewReader(`{}`), "Content-Type", "application/json")
		}
		return s.do(op.method, path, tok, nil)
	}
	ops, scoped := documentedOperations(t), 0
	for _, op := range ops {
		if op.scoped {
			scoped++
		}
	}
	if len(ops) < 20 || scoped < 5 {
		t.Fatalf("%d operations, %d with x-required-scopes: not the whole document", len(ops), scoped)
	}
	for _, op := range ops {
		r := call(op, scopeless)
		var e struct{ Code string }
		_ = json.Unmarshal(r.body, &e)
		if !op.scoped {
			if e.Code == "insufficient_scope" {
				t.Errorf("%s %s asks for a scope (%s) but lists no x-required-scopes", op.method, op.path, r.header.Get("WWW-Authenticate"))
			}
			continue
		}
		m := regexp.MustCompile(`^Bearer error="insufficient_scope", scope="([^"]+)"$`).FindStringSubmatch(r.header.Get("WWW-Authenticate"))
		if r.status != 403 || e.Code != "insufficient_scope" || m == nil {
			t.Errorf("%s %s without scopes: %d %s %q, want 403 insufficient_scope", op.method, op.path, r.status, e.Code, r.header.Get("WWW-Authenticate"))
			continue
		}
		documented := false
		for _, req := range op.security {
			documented = documented || slices.Contains(req["bearerAuth"], m[1])
		}
		if !documented {
			t.Errorf("%s %s asks for %s, not in its security requirements %v", op.method, op.path, m[1], op.security)
		}
		if r := call(op, w.scopedToken("u", m[1])); r.status == 403 {
			t.Errorf("%s %s with %s: still 403 %s", op.method, op.path, m[1], r.body)
		}
	}
}
