package httpapi

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// get requests path without a token.
func get(t *testing.T, s http.Handler, path string, header ...string) (int, http.Header, string) {
	t.Helper()
	w := do(t, s, http.MethodGet, path, nil, append([]string{"Authorization", ""}, header...)...)
	return w.Code, w.Header(), w.Body.String()
}

func TestDocs_PageIsServedWithoutATokenUnderASameOriginPolicy(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	code, h, body := get(t, s, "/docs")
	if code != http.StatusOK {
		t.Fatalf("GET /docs: %d %s", code, body)
	}
	if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", h.Get("X-Content-Type-Options"))
	}
	checkDocsCSP(t, h.Get("Content-Security-Policy"))
	if !strings.Contains(body, `id="swagger-ui"`) {
		t.Errorf("the page has no renderer root: %s", body)
	}
}

// checkDocsCSP checks the policy allows only this origin.
func checkDocsCSP(t *testing.T, csp string) {
	t.Helper()
	directives := map[string]string{}
	for d := range strings.SplitSeq(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	for name, want := range map[string]string{
		"default-src":     "'self'",
		"script-src":      "'self'",
		"style-src":       "'self'",
		"img-src":         "'self' data:",
		"connect-src":     "'self'",
		"object-src":      "'none'",
		"frame-ancestors": "'none'",
	} {
		if got := directives[name]; got != want {
			t.Errorf("CSP %s %q, want %q (policy %q)", name, got, want, csp)
		}
	}
	for _, bad := range []string{"http:", "https:", "*", "unsafe-eval", "unsafe-inline"} {
		if strings.Contains(csp, bad) {
			t.Errorf("CSP allows %s: %q", bad, csp)
		}
	}
}

var (
	docsRefs     = regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*"([^"]*)"`)
	docsScripts  = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	docsInlineCS = regexp.MustCompile(`(?i)<style\b|\sstyle\s*=|\son[a-z]+\s*=`)
)

func TestDocs_PageReferencesOnlySameOriginAssetsThatAreServed(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	_, _, page := get(t, s, "/docs")

	if m := docsInlineCS.FindString(page); m != "" {
		t.Errorf("inline style or event handler %q: the CSP refuses it", m)
	}
	for _, m := range docsScripts.FindAllStringSubmatch(page, -1) {
		if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
			t.Errorf("inline script %q: the CSP refuses it", m[0])
		}
	}

	refs := docsRefs.FindAllStringSubmatch(page, -1)
	if len(refs) < 4 {
		t.Fatalf("only %d references in the page: %s", len(refs), page)
	}
	assets := 0
	for _, m := range refs {
		ref := m[1]
		switch {
		case ref == "data:,": // the empty favicon: no request at all
			continue
		case !strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "//"):
			t.Errorf("reference %q is not a path on this origin", ref)
			continue
		case !strings.HasPrefix(ref, "/docs/assets/"):
			if ref != "/openapi.json" {
				t.Errorf("reference %q outside /docs/assets", ref)
			}
			continue
		}
		assets++
		code, h, body := get(t, s, ref)
		if code != http.StatusOK || body == "" {
			t.Errorf("GET %s: %d, %d bytes", ref, code, len(body))
			continue
		}
		want := map[bool]string{true: "text/javascript; charset=utf-8", false: "text/css; charset=utf-8"}[strings.HasSuffix(ref, ".js")]
		if ct := h.Get("Content-Type"); ct != want {
			t.Errorf("GET %s: Content-Type %q, want %q", ref, ct, want)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("ETag") == "" {
			t.Errorf("GET %s: headers %v", ref, h)
		}
		checkDocsCSP(t, h.Get("Content-Security-Policy"))
		if strings.HasSuffix(ref, ".js") && ref != "/docs/assets/swagger-ui/swagger-ui-bundle.js" {
			if u := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+`).FindString(body); u != "" {
				t.Errorf("%s names another origin: %q", ref, u)
			}
		}
	}
	if assets != 4 {
		t.Errorf("%d assets in the page, want 4 (Swagger UI's bundle and stylesheet, init.js, docs.css)", assets)
	}

	code, h, body := get(t, s, "/docs/assets/init.js")
	if code != http.StatusOK || !strings.Contains(body, `url: "/openapi.json"`) || !strings.Contains(body, "validatorUrl: null") {
		t.Errorf("init.js does not render this origin's /openapi.json without the online validator: %d %s", code, body)
	}
	if code, _, _ := get(t, s, "/docs/assets/init.js", "If-None-Match", h.Get("ETag")); code != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", code)
	}
}

func TestDocs_LicenceIsServedAndUnknownAssetsAre404(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	code, h, body := get(t, s, "/docs/assets/swagger-ui/LICENSE")
	if code != http.StatusOK || h.Get("Content-Type") != "text/plain; charset=utf-8" || !strings.Contains(body, "Apache License") {
		t.Errorf("LICENSE: %d %q", code, h.Get("Content-Type"))
	}
	for _, p := range []string{"/docs/assets/nope.js", "/docs/assets/swagger-ui", "/docs/assets/swagger-ui/", "/docs/assets/swagger-ui/swagger-ui.css.map"} {
		if code, _, body := get(t, s, p); code != http.StatusNotFound {
			t.Errorf("GET %s: %d %.100s", p, code, body)
		}
	}
	if w := do(t, s, http.MethodPost, "/docs", nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /docs: %d", w.Code)
	}
}

// The vendored files are those of the version scripts/vendor-docs.sh pins.
func TestDocs_VendoredSwaggerUIIsThePinnedVersion(t *testing.T) {
	script, err := os.ReadFile("../../scripts/vendor-docs.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^version=(\S+)$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("no version= in scripts/vendor-docs.sh")
	}
	b, err := docsFiles.ReadFile("docs/assets/swagger-ui/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Name, Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Name != "swagger-ui-dist" || pkg.Version != string(m[1]) {
		t.Errorf("vendored %s@%s, scripts/vendor-docs.sh pins %s: run bash scripts/vendor-docs.sh", pkg.Name, pkg.Version, m[1])
	}
}
