package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return errJSONTooLarge
		}
		return errBadJSON.Wrap(err)
	}
	return unmarshalStrict(body, v)
}

// unmarshalStrict decodes one JSON value into v under the strict rules.
func unmarshalStrict(body []byte, v any) error {
	if err := checkDuplicateKeys(body); err != nil {
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
	return nil
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

// checkDuplicateKeys walks the JSON tokens and refuses an object that
// names a key twice, at any depth.
func checkDuplicateKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return jsonError(err)
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jsonError(err)
				}
				key := k.(string)
				if seen[key] {
					return errBadJSON.WithMessage("Duplicate key %s", joinPath(path, key))
				}
				seen[key] = true
				if err := walk(joinPath(path, key)); err != nil {
					return err
				}
			}
			_, err = dec.Token() // '}'
			return jsonErrorOrNil(err)
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token() // ']'
			return jsonErrorOrNil(err)
		}
		return nil
	}
	return walk("")
}

func jsonErrorOrNil(err error) error {
	if err != nil {
		return jsonError(err)
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
