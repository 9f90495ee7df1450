package test

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/test/testenv"
)

// The browser of the docs test: `make test` sets both from
// scripts/install-browser.sh.
const (
	envChromium   = "CHROMIUM_BIN"
	envPlaywright = "PLAYWRIGHT_DIR"
)

// docsShots is the git-ignored folder the browser test saves its
// screenshots into (test/screenshots).
const docsShots = "screenshots"

//go:embed docs_browser.mjs
var docsBrowserScript []byte

// docsBrowser returns the chromium binary and the playwright-core install;
// without them the test is skipped, or fails when CI is set.
func docsBrowser(t *testing.T) (chromium, playwright string) {
	t.Helper()
	chromium, playwright = os.Getenv(envChromium), os.Getenv(envPlaywright)
	if chromium == "" || playwright == "" {
		testenv.Missing(t, "browser: "+envChromium+" or "+envPlaywright+" not set", "run make test, which installs it (scripts/install-browser.sh)")
	}
	if _, err := os.Stat(filepath.Join(playwright, "node_modules", "playwright-core", "package.json")); err != nil {
		t.Fatalf("%s=%s has no playwright-core (run scripts/install-browser.sh): %v", envPlaywright, playwright, err)
	}
	return chromium, playwright
}

// TestDocs_BrowserRendersEveryOperationAndTriesACall opens /docs in
// chromium: the page loads nothing from another origin and logs no error,
// lists every operation of /openapi.json, and runs GET
// /cloud-blob/metadata/{id} with "try it" after a token is pasted into its
// authorize dialog, showing 200.
func TestDocs_BrowserRendersEveryOperationAndTriesACall(t *testing.T) {
	chromium, playwright := docsBrowser(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: %v", err)
	}

	w := newWorld(t)
	s := w.start(nil)
	token := w.token("docs-reader")
	r := s.upload(token, fileFields("Referral letter.pdf", "application/pdf", pdf, field{"containerName", "documents"})...)
	if r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	id := int64(r.json(t)["id"].(float64))

	// The script beside a link to the installed node_modules: ES modules
	// resolve packages from the script's own directory. A short path:
	// chromium's profile socket lives under TMPDIR, and a unix socket path
	// of t.TempDir's length is too long.
	work, err := os.MkdirTemp("", "cbdocs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	script := filepath.Join(work, "docs_browser.mjs")
	if err := os.WriteFile(script, docsBrowserScript, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(playwright, "node_modules"), filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(docsShots, 0o755); err != nil {
		t.Fatal(err)
	}
	shots, err := filepath.Abs(docsShots)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = work
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + work,
		"TMPDIR=" + work,
		"BASE_URL=" + s.base,
		"TOKEN=" + token,
		"TRY_METHOD=get",
		"TRY_PATH=/cloud-blob/metadata/{id}",
		fmt.Sprintf(`TRY_PARAMS={"id":"%d"}`, id),
		"CHROMIUM_BIN=" + chromium,
		"SCREENSHOT_DIR=" + shots,
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser: %v\n%s%s", err, stdout.String(), strings.ReplaceAll(stderr.String(), token, "<token>"))
	}
	t.Logf("browser: %s (screenshots in %s)", strings.TrimSpace(stdout.String()), shots)
}
