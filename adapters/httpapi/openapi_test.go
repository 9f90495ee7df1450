package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// undocumented are the routes the document leaves out, as the contract
// allows: probes, metrics and the documentation itself.
func undocumented(template string) bool {
	switch template {
	case "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs":
		return true
	}
	return strings.HasPrefix(template, "/docs/")
}

// openAPIModel parses the served document.
func openAPIModel(t *testing.T) (libopenapi.Document, *v3.Document) {
	t.Helper()
	doc, err := libopenapi.NewDocument(OpenAPIDocument())
	if err != nil {
		t.Fatalf("parse the document: %v", err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build the v3 model: %v", err)
	}
	return doc, &model.Model
}

// operation is one method on one path template.
type operation struct{ method, path string }

// documentedOperations lists the document's operations.
func documentedOperations(t *testing.T) map[operation]*v3.Operation {
	t.Helper()
	_, model := openAPIModel(t)
	ops := map[operation]*v3.Operation{}
	for path, item := range model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			ops[operation{strings.ToUpper(method), path}] = op
		}
	}
	return ops
}

// routeVar matches a gorilla/mux variable, with or without its pattern.
var routeVar = regexp.MustCompile(`\{([^}:]+)(:[^}]*)?\}`)

// routedOperations walks the router: every method of every route with a
// path template, in the document's {name} form.
func routedOperations(t *testing.T, s *Server) []operation {
	t.Helper()
	var ops []operation
	err := s.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return nil // a route without a path
		}
		methods, err := route.GetMethods()
		if err != nil {
			return nil // a prefix of a subrouter
		}
		for _, m := range methods {
			ops = append(ops, operation{m, routeVar.ReplaceAllString(tpl, "{$1}")})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

func TestOpenAPI_IsAValid31Document(t *testing.T) {
	doc, _ := openAPIModel(t)
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("build the validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s (%s)", se.Reason, se.FieldPath, se.KeywordLocation)
			}
		}
	}
}

func TestOpenAPI_DocumentsEveryRouteAndNothingElse(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	documented := documentedOperations(t)
	routed := map[operation]bool{}
	for _, op := range routedOperations(t, s) {
		routed[op] = true
		if !undocumented(op.path) && documented[op] == nil {
			t.Errorf("%s %s is routed but not in openapi.yaml", op.method, op.path)
		}
	}
	for op := range documented {
		if !routed[op] {
			t.Errorf("%s %s is in openapi.yaml but not routed", op.method, op.path)
		}
	}
	if len(routed) < 20 {
		t.Fatalf("only %d routes walked: %v", len(routed), routed)
	}
}

// TestOpenAPI_MarksExactlyTheAuditedOperations calls every documented
// operation without a token: the audited ones count their 401 for the
// trail, the others do not.
func TestOpenAPI_MarksExactlyTheAuditedOperations(t *testing.T) {
	a := &trail{}
	s := New(Config{
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		Auth:           tokens{},
		Storage:        &StorageMock{},
		Registry:       prometheus.NewRegistry(),
		Ready:          func(context.Context) error { return nil },
		Audit:          a,
		MaxUploadBytes: 1 << 20,
	})
	for op, o := range documentedOperations(t) {
		path := routeVar.ReplaceAllString(op.path, "1")
		w := httptest.NewRecorder()
		before := len(a.unauthenticated)
		s.ServeHTTP(w, httptest.NewRequest(op.method, path, nil))
		counted := len(a.unauthenticated) - before
		_, marked := o.Extensions.Get("x-audited")
		switch {
		case w.Code != http.StatusUnauthorized:
			t.Errorf("%s %s answered %d without a token", op.method, op.path, w.Code)
		case marked && counted != 1:
			t.Errorf("%s %s is marked x-audited but counted %d refusals", op.method, op.path, counted)
		case !marked && counted != 0:
			t.Errorf("%s %s is not marked x-audited but counted %d refusals", op.method, op.path, counted)
		}
		tags := o.Tags
		if marked != slices.Contains(tags, "audited") {
			t.Errorf("%s %s: x-audited %v but tags %v", op.method, op.path, marked, tags)
		}
		_, patient := o.Extensions.Get("x-patient-data")
		if patient != slices.Contains(tags, "patient-data") {
			t.Errorf("%s %s: x-patient-data %v but tags %v", op.method, op.path, patient, tags)
		}
	}
}

func TestOpenAPI_ServedWithoutTokenAsJSON(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	r := httptest.NewRequest(http.MethodGet, "/openapi.json", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	for k, want := range map[string]string{
		"Content-Type":            "application/json",
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
	} {
		if got := w.Header().Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" || doc.Paths["/cloud-blob/upload"] == nil {
		t.Fatalf("not the document (%v): %.200s", err, w.Body)
	}
}

func TestYAMLToJSON_KeepsKeyOrderAndTypes(t *testing.T) {
	got, err := yamlToJSON([]byte("b: 1\na: [x, true, null, 2.5]\nc: &c {\"200\": {d: e}}\nf: *c\n"))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"b":1,"a":["x",true,null,2.5],"c":{"200":{"d":"e"}},"f":{"200":{"d":"e"}}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
