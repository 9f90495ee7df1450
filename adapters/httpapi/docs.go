package httpapi

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
)

// The API reference page (GET /docs): our index.html and init.js around
// Swagger UI, vendored by scripts/vendor-docs.sh into docs/assets/swagger-ui.
//
//go:embed docs/index.html docs/assets
var docsFiles embed.FS

// docsCSP lets the page load nothing but this origin's files: scripts and
// styles from /docs/assets, the API document and "try it" calls by fetch to
// the same origin, and the data: images of Swagger UI's stylesheet (its
// icons). Swagger UI sets element styles from script (CSSOM), which a CSP
// does not restrict, so no 'unsafe-inline' is needed; no inline script
// either (the configuration is assets/init.js).
const docsCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// docsTypes are the content types of the embedded files, by extension
// (not mime.TypeByExtension, which reads the machine's own tables).
var docsTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

// docsAsset is one embedded file, ready to serve.
type docsAsset struct {
	body  []byte
	ctype string
	etag  string
}

// docsRoutes serves GET /docs and GET /docs/assets/{path}, without a token.
// The files are indexed on the first request, not in New (the servers of
// unit tests never ask for them).
func (s *Server) docsRoutes(r *mux.Router) {
	site := sync.OnceValue(loadDocs)
	r.Handle("/docs", docsHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site()["index.html"].serve(w, r)
	}))).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/docs/assets/{path:.+}", docsHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := site()["assets/"+mux.Vars(r)["path"]]
		if !ok {
			s.writeError(w, r, errNotFound)
			return
		}
		a.serve(w, r)
	}))).Methods(http.MethodGet, http.MethodHead)
}

// loadDocs indexes the embedded files by their path under docs/.
func loadDocs() map[string]docsAsset {
	files := map[string]docsAsset{}
	err := fs.WalkDir(docsFiles, "docs", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := docsFiles.ReadFile(name)
		if err != nil {
			return err
		}
		ctype, ok := docsTypes[path.Ext(name)]
		if !ok {
			ctype = "text/plain; charset=utf-8" // LICENSE, NOTICE
		}
		sum := sha256.Sum256(b)
		files[strings.TrimPrefix(name, "docs/")] = docsAsset{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic("httpapi: embedded docs: " + err.Error()) // the files are part of the binary: only a build mistake gets here
	}
	return files
}

// docsHeaders sets the security headers of the docs page and its assets
// (observe sets nosniff on every response).
func docsHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", docsCSP)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// serve answers with the file, 304 to a matching If-None-Match; the
// browser revalidates every time (the files change with the binary).
func (a docsAsset) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
