package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/carebridge/carebridge/core"
)

// maxJSONBytes bounds a JSON request body.
const maxJSONBytes = 1 << 20

// writeJSON writes v as the JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do
}

// envelope is the contract's success envelope.
type envelope struct {
	Message string `json:"message"`
	Status  string `json:"status"`
	Data    any    `json:"data"`
}

func writeSuccess(w http.ResponseWriter, status int, message string, data any) {
	writeJSON(w, status, envelope{Message: message, Status: "success", Data: data})
}

var (
	errNotJSON      = &core.Error{Kind: core.KindUnsupportedMedia, Code: "unsupported_media_type", Message: "Content-Type must be application/json"}
	errJSONTooLarge = &core.Error{Kind: core.KindTooLarge, Code: "body_too_large", Message: "The JSON body is larger than 1 MiB"}
	errBadJSON      = &core.Error{Kind: core.KindInvalid, Code: "invalid_json", Message: "The body is not valid JSON"}
)

// decodeJSON reads a strict JSON body into v: the right content type, at
// most 1 MiB, no unknown fields, no duplicate keys, no trailing data, and
// every value of the declared type.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errNotJSON
	}
	// One allocation when the length is announced (io.ReadAll would grow
	// its buffer to about twice the body).
	var body bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= maxJSONBytes {
		body.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := body.ReadFrom(http.MaxBytesReader(w, r.Body, maxJSONBytes)); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return errJSONTooLarge
		}
		return errBadJSON.Wrap(err)
	}
	return unmarshalStrict(body.Bytes(), v)
}

// unmarshalStrict decodes one JSON value into v under the strict rules.
// The nesting is checked before the decoder reads anything, and the keys
// after it has refused unknown fields and wrong types: then the objects of
// a struct's body hold only its fields, and a flat body of a million keys
// costs the decoder's refusal alone.
func unmarshalStrict(body []byte, v any) error {
	if err := walkJSON(body, nil); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errBadJSON.WithMessage("The body must hold exactly one JSON value")
	}
	return walkJSON(body, &keyRules{root: reflect.TypeOf(v)})
}

// jsonError turns a decoding failure into a message naming the field.
func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return errBadJSON.WithMessage("The body must be a JSON object")
		}
		return errBadJSON.WithMessage("%s must be %s, not %s", field, jsonType(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return errBadJSON.WithMessage("The body is not valid JSON (at byte %d)", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errBadJSON.WithMessage("Unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errBadJSON.WithMessage("The body is empty or cut short")
	}
	return errBadJSON.Wrap(err)
}

func jsonType(kind string) string {
	switch kind {
	case "int", "int64", "int32", "uint", "uint64":
		return "an integer"
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "of another type"
}

// maxJSONDepth is the deepest nesting of arrays and objects a body may
// have: far more than any request needs, and few enough that what follows
// the check (encoding/json, whose own limit is 10,000) has little to do.
const maxJSONDepth = 64

var errJSONTooDeep = errBadJSON.WithMessage("JSON nesting is deeper than %d levels", maxJSONDepth)

// walkJSON refuses a body that nests arrays and objects deeper than
// maxJSONDepth and, with keys, one with an object that names a key twice,
// at any depth, or that names a field of the Go value it decodes into in
// another case than the field's ("NAME" for "name": encoding/json would
// take it). It reads the bytes once, without recursion, keeping one
// entry per open array or object, so a body of nothing but "[" costs a few
// KiB to refuse; a key's path is built only to report it. It does not check
// the syntax: where it cannot follow a body, it stops and leaves the body to
// the decoder, which says what is wrong and where (nothing it stops at is
// valid JSON, and the decoder reads no further than that).
func walkJSON(body []byte, keys *keyRules) error {
	var open []container
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{', '[':
			if len(open) == maxJSONDepth {
				return errJSONTooDeep
			}
			c := container{object: body[i] == '{', wantKey: body[i] == '{'}
			if keys != nil {
				c.typ = keys.root
				if len(open) > 0 {
					c.typ = open[len(open)-1].valueType()
				}
			}
			open = append(open, c)
		case '}', ']':
			if len(open) == 0 {
				return nil // not JSON
			}
			open[len(open)-1] = container{} // its keys are garbage now
			open = open[:len(open)-1]
		case ',':
			if len(open) > 0 {
				top := &open[len(open)-1]
				top.wantKey = top.object
				top.index++
			}
		case '"':
			end := stringEnd(body, i)
			if end < 0 {
				return nil // not JSON
			}
			if keys != nil && len(open) > 0 && open[len(open)-1].object && open[len(open)-1].wantKey {
				key, ok := decodeKey(body[i : end+1])
				if !ok {
					return nil // not JSON
				}
				top := &open[len(open)-1]
				if top.seen(key) {
					return errBadJSON.WithMessage("Duplicate key %s", keyPath(open, key))
				}
				top.key, top.wantKey = key, false
				if !top.field(key) {
					return errBadJSON.WithMessage("Unknown field %q", keyPath(open, key))
				}
			}
			i = end
		}
	}
	return nil
}

// keyRules are what walkJSON checks keys against: the Go type the body
// decodes into.
type keyRules struct{ root reflect.Type }

// container is an open array or object of walkJSON's walk.
type container struct {
	object  bool
	wantKey bool                // object: a key comes next
	key     string              // object: the key of the value being read
	index   int                 // array: the index of the element being read
	keys    []string            // object: its keys so far, while few
	set     map[string]struct{} // object: its keys, once many
	// typ is the Go type the container decodes into (nil: any, or one
	// that decodes itself); member that of the value being read.
	typ, member reflect.Type
}

// field reports whether key names a field of the object's struct exactly
// (any key, when the object is not a struct), and sets the type of the
// value that follows.
func (c *container) field(key string) bool {
	t := plain(c.typ)
	switch {
	case t == nil:
		c.member = nil
	case t.Kind() == reflect.Map:
		c.member = t.Elem()
	case t.Kind() == reflect.Struct:
		f, ok := jsonFields(t)[key]
		c.member = f
		return ok
	default:
		c.member = nil
	}
	return true
}

// valueType is the Go type of the value being read in the container.
func (c *container) valueType() reflect.Type {
	if c.object {
		return c.member
	}
	if t := plain(c.typ); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		return t.Elem()
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// plain is t without pointers, or nil when values of t decode themselves
// (their keys are theirs to judge) or t is an interface.
func plain(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// fieldsByType caches jsonFields.
var fieldsByType sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields are the JSON names of a struct's fields, as encoding/json
// writes them (its tag's name, else the field's; an embedded struct's
// fields promoted), and their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldsByType.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	addFields(fields, t, 0)
	fieldsByType.Store(t, fields)
	return fields
}

func addFields(fields map[string]reflect.Type, t reflect.Type, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case f.Anonymous && name == "" && ft.Kind() == reflect.Struct && depth < 8:
			addFields(fields, ft, depth+1)
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		if _, taken := fields[name]; !taken {
			fields[name] = f.Type
		}
	}
}

// seen reports whether the object already has key, and records it. Most
// objects have a few keys, searched in a slice; a large one gets a map.
func (c *container) seen(key string) bool {
	if c.set != nil {
		if _, ok := c.set[key]; ok {
			return true
		}
		c.set[key] = struct{}{}
		return false
	}
	if slices.Contains(c.keys, key) {
		return true
	}
	c.keys = append(c.keys, key)
	if len(c.keys) > 16 {
		c.set = make(map[string]struct{}, 2*len(c.keys))
		for _, k := range c.keys {
			c.set[k] = struct{}{}
		}
		c.keys = nil
	}
	return false
}

// stringEnd is the index of the quote that ends the string starting at
// body[start], or -1.
func stringEnd(body []byte, start int) int {
	for i := start + 1; i < len(body); i++ {
		switch body[i] {
		case '"':
			return i
		case '\\':
			i++
		}
	}
	return -1
}

// decodeKey is the key a quoted string names, as encoding/json reads it:
// escapes resolved, invalid UTF-8 replaced. ok is false for a string that
// is not valid JSON.
func decodeKey(quoted []byte) (key string, ok bool) {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw), true
	}
	return key, json.Unmarshal(quoted, &key) == nil
}

// keyPath names key of the innermost open object by its place in the body:
// "patient.email", "operatingHours[2].day".
func keyPath(open []container, key string) string {
	var b strings.Builder
	for _, c := range open[:len(open)-1] {
		if c.object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(c.key)
		} else {
			fmt.Fprintf(&b, "[%d]", c.index)
		}
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
	return b.String()
}
