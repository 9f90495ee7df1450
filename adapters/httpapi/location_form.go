package httpapi

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/storage"
)

// locationGroups names the fields of the two groups of the location form
// and where each goes in a LocationInput.
func locationGroups(in *business.LocationInput) map[string]map[string]**string {
	return map[string]map[string]**string{
		"generalInfo": {
			"name": &in.Name, "timezone": &in.Timezone, "npi": &in.NPI, "taxId": &in.TaxID,
			"stateLicense": &in.StateLicense, "phone": &in.Phone, "fax": &in.Fax, "email": &in.Email,
			"website": &in.Website, "adminName": &in.AdminName, "adminPhone": &in.AdminPhone, "adminEmail": &in.AdminEmail,
		},
		"address": {
			"address": &in.Address, "city": &in.City, "state": &in.State, "zipCode": &in.ZipCode,
			"country": &in.Country, "suite": &in.Suite,
		},
	}
}

var errLogoTooLarge = &core.Error{Kind: core.KindTooLarge, Code: "logo_too_large", Message: "The logo is larger than the maximum logo size"}

// readLocationForm reads the location create/update form. Each group may
// come as one JSON-valued part ("generalInfo", "address") or as flat fields
// ("generalInfo[name]", "address[city]"); the optional logo is the part
// "logo". Unknown parts or fields, and a field given twice, are refused.
func (s *Server) readLocationForm(w http.ResponseWriter, r *http.Request) (business.LocationInput, *business.Logo, error) {
	var in business.LocationInput
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return in, nil, errNotMultipart
	}
	body := http.MaxBytesReader(w, r.Body, business.MaxLogoBytes+multipartSlack)
	form := multipart.NewReader(body, params["boundary"])
	groups := locationGroups(&in)
	var logo *business.Logo
	for {
		part, err := form.NextPart()
		if errors.Is(err, io.EOF) {
			return in, logo, nil
		}
		if err != nil {
			return in, nil, bodyErr(err)
		}
		name := part.FormName()
		switch group, field, flat := splitField(name); {
		case name == "logo":
			if logo != nil {
				return in, nil, errDuplicatePart.WithMessage("Form field %q sent twice", name)
			}
			if logo, err = readLogo(part); err != nil {
				return in, nil, err
			}
		case groups[name] != nil:
			if err := readGroup(part, name, groups[name]); err != nil {
				return in, nil, err
			}
		case flat && groups[group] != nil && groups[group][field] != nil:
			value, err := readField(part)
			if err != nil {
				return in, nil, bodyErr(err)
			}
			if err := setField(groups[group][field], group, field, value); err != nil {
				return in, nil, err
			}
		default:
			return in, nil, errUnknownPart.WithMessage("Unknown form field %q", name)
		}
	}
}

// splitField splits "generalInfo[name]" into its group and field.
func splitField(name string) (group, field string, ok bool) {
	group, rest, ok := strings.Cut(name, "[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return "", "", false
	}
	return group, strings.TrimSuffix(rest, "]"), true
}

func setField(dst **string, group, field, value string) error {
	if *dst != nil {
		return errDuplicatePart.WithMessage("Form field %s[%s] sent twice", group, field)
	}
	*dst = &value
	return nil
}

// readGroup reads a JSON-valued group part: an object of strings whose keys
// are the group's fields.
func readGroup(part *multipart.Part, group string, fields map[string]**string) error {
	raw, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return bodyErr(err)
	}
	if len(raw) > maxFieldBytes {
		return errFieldTooLong.WithMessage("Form field %q is longer than %d bytes", group, maxFieldBytes)
	}
	var values map[string]*string
	if err := unmarshalStrict(raw, &values); err != nil {
		var e *core.Error
		if errors.As(err, &e) {
			return e.WithMessage("%s: %s", group, e.Message)
		}
		return err
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		dst, ok := fields[k]
		if !ok {
			return errUnknownPart.WithMessage("Unknown field %s.%s", group, k)
		}
		if values[k] == nil {
			continue
		}
		if err := setField(dst, group, k, *values[k]); err != nil {
			return err
		}
	}
	return nil
}

// readLogo reads the logo part into memory (it is small: at most
// MaxLogoBytes). An empty part without a file name, as browsers send for an
// empty file input, is no logo. A missing or generic content type is taken
// from the file name's extension.
func readLogo(part *multipart.Part) (*business.Logo, error) {
	b, err := io.ReadAll(io.LimitReader(part, business.MaxLogoBytes+1))
	if err != nil {
		return nil, bodyErr(err)
	}
	if len(b) > business.MaxLogoBytes {
		return nil, errLogoTooLarge.WithMessage("The logo is larger than %d bytes", business.MaxLogoBytes)
	}
	filename := path.Base(strings.ReplaceAll(part.FileName(), `\`, "/"))
	if len(b) == 0 && part.FileName() == "" {
		return nil, nil
	}
	ct := storage.MediaType(part.Header.Get("Content-Type"))
	if ct == "" || ct == "application/octet-stream" {
		ct = mediaTypeOf(filename)
	}
	if filename == "." || filename == "/" || filename == "" {
		filename = "logo" + extensionOf(ct)
	}
	return &business.Logo{Filename: filename, ContentType: ct, Size: int64(len(b)), Body: b}, nil
}

// mediaTypeOf is the allowed media type of a file name's extension, or "".
func mediaTypeOf(filename string) string {
	ext := strings.ToLower(path.Ext(filename))
	for _, t := range storage.FileTypes {
		if slices.Contains(t.Extensions, ext) {
			return t.MediaTypes[0]
		}
	}
	return ""
}

// extensionOf is the first extension of an allowed media type, or "".
func extensionOf(mediaType string) string {
	for _, t := range storage.FileTypes {
		if slices.Contains(t.MediaTypes, mediaType) {
			return t.Extensions[0]
		}
	}
	return ""
}
