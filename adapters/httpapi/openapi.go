package httpapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"
	"gopkg.in/yaml.v3"
)

// openAPIYAML is the API's OpenAPI 3.1 document, maintained by hand beside
// the handlers it describes (openapi_test.go keeps it and the router in
// step; the end-to-end tests validate every response against it).
//
//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPIDocument returns the OpenAPI 3.1 document as JSON, its keys in the
// order of the source. It panics when the embedded source is not valid
// YAML, which the package's tests rule out (as template.Must does).
func OpenAPIDocument() []byte {
	doc, err := yamlToJSON(openAPIYAML)
	if err != nil {
		panic(fmt.Sprintf("httpapi: openapi.yaml: %v", err))
	}
	return doc
}

// apiDocRoutes serves the document at GET /openapi.json, without a token.
// It keeps the router, which New fills afterwards, for the test that holds
// the document and the routes in step.
func (s *Server) apiDocRoutes(r *mux.Router) {
	s.router = r
	doc := OpenAPIDocument()
	r.HandleFunc("/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		h.Set("Cache-Control", "no-cache")
		_, _ = w.Write(doc) // the client may be gone; nothing to do
	}).Methods(http.MethodGet)
}

// yamlToJSON converts one YAML document to JSON, keeping the order of
// mapping keys (encoding/json would sort a map's).
func yamlToJSON(src []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeNode(&buf, &root); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeNode(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: want one document", n.Line)
		}
		return writeNode(buf, n.Content[0])
	case yaml.AliasNode:
		return writeNode(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return fmt.Errorf("line %d: keys must be plain scalars", k.Line)
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value) // a string always marshals
			buf.Write(key)
			buf.WriteByte(':')
			if err := writeNode(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeNode(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		buf.Write(b)
		return nil
	}
	return fmt.Errorf("line %d: unexpected YAML node", n.Line)
}
