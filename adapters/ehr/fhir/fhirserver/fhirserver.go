// Package fhirserver runs a real FHIR R4 server: the in-memory repository
// and FHIR router of Medplum (@medplum/fhir-router and @medplum/core from
// npm), served over HTTP on 127.0.0.1 by server.mjs in this directory (a
// Node.js child process). It searches, pages (link next), creates, reads,
// updates, patches and deletes as Medplum does, and answers errors with
// OperationOutcome. The demo (cmd/carebridge-demo) ships it; the tests
// start it through test/fhirtest. It links no test code.
//
// The npm packages come from the install directory of
// scripts/install-medplum.sh (the tests read it from MEDPLUM_DIR).
//
//	srv, err := fhirserver.Start(ctx, dir, work, fhirserver.WithAPIKey("k"))
//	defer srv.Close()
//	created, err := srv.Post(map[string]any{"resourceType": "Patient"})
//	base := srv.URL() // http://127.0.0.1:PORT/fhir
package fhirserver

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core/ehr"
)

// EnvDir names the environment variable that holds the install directory
// (with node_modules) printed by scripts/install-medplum.sh.
const EnvDir = "MEDPLUM_DIR"

const (
	readyTimeout = 90 * time.Second // loading the R4 definitions takes seconds on a busy machine
	stopTimeout  = 10 * time.Second
	maxOutput    = 64 << 10
)

//go:embed server.mjs
var serverScript []byte

// Option configures Start.
type Option func(*config)

type config struct {
	apiKey       string
	bearerToken  string
	defaultCount int
	maxCount     int
	noValidate   bool
	logRequests  bool
}

// WithAPIKey makes the server require key in the X-API-Key header of every
// request (401 OperationOutcome without it).
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithBearerToken makes the server require "Authorization: Bearer token".
// With WithAPIKey as well, either credential is accepted.
func WithBearerToken(token string) Option { return func(c *config) { c.bearerToken = token } }

// WithDefaultCount sets the page size of a search without _count (the
// server's default is 20).
func WithDefaultCount(n int) Option { return func(c *config) { c.defaultCount = n } }

// WithMaxCount sets the largest page the server returns: a search asking
// for a larger _count gets pages of n, with next links (default 1000).
func WithMaxCount(n int) Option { return func(c *config) { c.maxCount = n } }

// WithoutValidation makes the server store resources that fail validation
// against the R4 structure definitions instead of answering 400.
func WithoutValidation() Option { return func(c *config) { c.noValidate = true } }

// WithRequestLog has the server log every request into Output.
func WithRequestLog() Option { return func(c *config) { c.logRequests = true } }

// Server is a running FHIR server.
type Server struct {
	base   string
	cfg    config
	client *http.Client
	proc   *process
}

// Start starts a new, empty in-memory FHIR server on a free 127.0.0.1
// port and waits until it listens (ctx bounds the wait): dir is the
// install directory of scripts/install-medplum.sh, work an existing
// directory for its files. Close stops it (the whole process group).
func Start(ctx context.Context, dir, work string, opts ...Option) (*Server, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}

	modules, err := filepath.Abs(filepath.Join(dir, "node_modules"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(modules, "@medplum", "fhir-router", "package.json")); err != nil {
		return nil, fmt.Errorf("%s=%s has no @medplum/fhir-router (run scripts/install-medplum.sh): %w", EnvDir, dir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node not found: %w", err)
	}

	// The embedded script beside a link to the installed node_modules: ES
	// modules resolve packages from the script's own directory, so this
	// runs the server of this source tree with the pinned packages.
	script := filepath.Join(work, "server.mjs")
	if err := os.WriteFile(script, serverScript, 0o644); err != nil {
		return nil, err
	}
	link := filepath.Join(work, "node_modules")
	_ = os.Remove(link) // a link left by an earlier run
	if err := os.Symlink(modules, link); err != nil {
		return nil, err
	}

	args := []string{script, "0"}
	if nodeNeedsWebSocketFlag(node) {
		args = append([]string{"--experimental-websocket"}, args...)
	}
	p, addr, err := launch(ctx, node, args, work, cfg.env(work))
	if err != nil {
		return nil, fmt.Errorf("start the FHIR server: %w", err)
	}
	return &Server{
		base:   "http://" + addr + "/fhir",
		cfg:    cfg,
		client: &http.Client{Timeout: 30 * time.Second},
		proc:   p,
	}, nil
}

// env is the server process's environment: the options as FHIRTEST_*
// variables, HOME and TMPDIR in the work directory.
func (cfg config) env(work string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + work,
		"TMPDIR=" + work,
		"FHIRTEST_API_KEY=" + cfg.apiKey,
		"FHIRTEST_BEARER_TOKEN=" + cfg.bearerToken,
	}
	if cfg.defaultCount > 0 {
		env = append(env, "FHIRTEST_DEFAULT_COUNT="+strconv.Itoa(cfg.defaultCount))
	}
	if cfg.maxCount > 0 {
		env = append(env, "FHIRTEST_MAX_COUNT="+strconv.Itoa(cfg.maxCount))
	}
	if cfg.noValidate {
		env = append(env, "FHIRTEST_VALIDATE=0")
	}
	if cfg.logRequests {
		env = append(env, "FHIRTEST_LOG=1")
	}
	return env
}

// Close stops the server (its whole process group).
func (s *Server) Close() error { return s.proc.stop() }

// URL returns the FHIR base URL, http://127.0.0.1:PORT/fhir.
func (s *Server) URL() string { return s.base }

// LogsRequests reports whether the server was started WithRequestLog.
func (s *Server) LogsRequests() bool { return s.cfg.logRequests }

// Output returns what the server printed so far (its request log with
// WithRequestLog, and any error).
func (s *Server) Output() string { return s.proc.out.String() }

// Post creates resource (a FHIR JSON object with resourceType) with a
// POST to its type and returns the stored resource, with its id and meta.
// Anything but 201 Created is an error.
func (s *Server) Post(resource map[string]any) (map[string]any, error) {
	return s.post(resource, false)
}

// PostWithMeta creates resource like Post but keeps the meta.lastUpdated
// (and meta.versionId) it carries, so tests can lay out _lastUpdated
// ranges.
func (s *Server) PostWithMeta(resource map[string]any) (map[string]any, error) {
	return s.post(resource, true)
}

func (s *Server) post(resource map[string]any, keepMeta bool) (map[string]any, error) {
	typ, _ := resource["resourceType"].(string)
	if typ == "" {
		return nil, errors.New("create: resource has no resourceType")
	}
	body, err := json.Marshal(resource)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", typ, err)
	}
	req, err := http.NewRequest(http.MethodPost, s.base+"/"+typ, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", typ, err)
	}
	req.Header.Set("Content-Type", "application/fhir+json")
	if keepMeta {
		req.Header.Set("X-Fhirtest-Keep-Meta", "true")
	}
	out, status, err := s.do(req)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", typ, err)
	}
	if status != http.StatusCreated {
		return nil, fmt.Errorf("create %s: status %d: %s", typ, status, out)
	}
	var created map[string]any
	if err := json.Unmarshal(out, &created); err != nil {
		return nil, fmt.Errorf("create %s: decode %q: %w", typ, out, err)
	}
	if id, _ := created["id"].(string); id == "" {
		return nil, fmt.Errorf("create %s: no id in %s", typ, out)
	}
	return created, nil
}

// Put updates resource (a FHIR JSON object with resourceType and id)
// with a PUT to its type and id, as a change made in the EHR's own
// screens, and returns the stored resource with its new meta. Anything but
// 200 OK is an error.
func (s *Server) Put(resource map[string]any) (map[string]any, error) {
	typ, _ := resource["resourceType"].(string)
	id, _ := resource["id"].(string)
	if typ == "" || id == "" {
		return nil, errors.New("update: resource has no resourceType or id")
	}
	body, err := json.Marshal(resource)
	if err != nil {
		return nil, fmt.Errorf("update %s/%s: %w", typ, id, err)
	}
	req, err := http.NewRequest(http.MethodPut, s.base+"/"+typ+"/"+id, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("update %s/%s: %w", typ, id, err)
	}
	req.Header.Set("Content-Type", "application/fhir+json")
	out, status, err := s.do(req)
	if err != nil {
		return nil, fmt.Errorf("update %s/%s: %w", typ, id, err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("update %s/%s: status %d: %s", typ, id, status, out)
	}
	var updated map[string]any
	if err := json.Unmarshal(out, &updated); err != nil {
		return nil, fmt.Errorf("update %s/%s: decode %q: %w", typ, id, out, err)
	}
	return updated, nil
}

// GetJSON sends an authenticated GET for path (relative to the FHIR base,
// e.g. "Patient?family=doe", or an absolute http:// URL) and returns the
// status and decoded JSON body.
func (s *Server) GetJSON(path string) (int, map[string]any, error) {
	u := path
	if !strings.HasPrefix(path, "http://") {
		u = s.base + "/" + strings.TrimPrefix(path, "/")
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	out, status, err := s.do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return status, nil, fmt.Errorf("GET %s: status %d, decode %q: %w", path, status, out, err)
	}
	return status, m, nil
}

// do sends req with the server's credentials and reads the whole answer.
func (s *Server) do(req *http.Request) ([]byte, int, error) {
	req.Header.Set("Accept", "application/fhir+json")
	if s.cfg.apiKey != "" {
		req.Header.Set("X-API-Key", s.cfg.apiKey)
	} else if s.cfg.bearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.bearerToken)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return out, resp.StatusCode, err
}

// PostAgent seeds an agent the way an EHR holds one: a Practitioner (with
// the time-zone extension), a PractitionerRole with its specialty and
// locations, and a Schedule whose free Slots are free; it returns the
// Practitioner's id.
func (srv *Server) PostAgent(a ehr.Agent, free []ehr.Period) (string, error) {
	create := func(r map[string]any) (string, error) {
		created, err := srv.Post(r)
		if err != nil {
			return "", err
		}
		return created["id"].(string), nil
	}
	p := map[string]any{
		"resourceType": "Practitioner",
		"active":       true,
		"name": []any{map[string]any{
			"use": "official", "text": a.Name, "family": a.LastName, "given": []any{a.FirstName},
		}},
		"telecom": []any{map[string]any{"system": "email", "value": a.Email}},
	}
	if a.Timezone != "" {
		p["extension"] = []any{map[string]any{"url": fhir.TimezoneExtension, "valueCode": a.Timezone}}
	}
	id, err := create(p)
	if err != nil {
		return "", err
	}
	role := map[string]any{
		"resourceType": "PractitionerRole",
		"active":       true,
		"practitioner": map[string]any{"reference": "Practitioner/" + id},
		"specialty":    []any{map[string]any{"text": a.Specialty}},
	}
	var locs []any
	for _, l := range a.LocationIDs {
		locs = append(locs, map[string]any{"reference": "Location/" + l})
	}
	if len(locs) > 0 {
		role["location"] = locs
	}
	if _, err := create(role); err != nil {
		return "", err
	}
	sched, err := create(map[string]any{
		"resourceType": "Schedule",
		"active":       true,
		"actor":        []any{map[string]any{"reference": "Practitioner/" + id}},
	})
	if err != nil {
		return "", err
	}
	for _, p := range free {
		if _, err := create(map[string]any{
			"resourceType": "Slot",
			"schedule":     map[string]any{"reference": "Schedule/" + sched},
			"status":       "free",
			"start":        p.Start.UTC().Format(time.RFC3339),
			"end":          p.End.UTC().Format(time.RFC3339),
		}); err != nil {
			return "", err
		}
	}
	return id, nil
}
