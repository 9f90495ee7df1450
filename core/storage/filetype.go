package storage

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"
)

// SniffLen is how many leading bytes DetectType needs at most.
const SniffLen = 512

// FileType is one allowed kind of file: the extensions and media types that
// name it and a check of its leading bytes.
type FileType struct {
	Name       string
	Extensions []string
	MediaTypes []string
	matches    func(head []byte) bool
}

func magic(prefixes ...string) func([]byte) bool {
	return func(head []byte) bool {
		for _, p := range prefixes {
			if bytes.HasPrefix(head, []byte(p)) {
				return true
			}
		}
		return false
	}
}

func webp(head []byte) bool {
	return len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP"
}

// text accepts UTF-8 without NUL bytes. head may end inside a multi-byte
// rune, so up to three trailing bytes are not judged.
func text(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for i := 0; i < 4 && !utf8.Valid(head); i++ {
		if len(head) == 0 {
			return false
		}
		head = head[:len(head)-1]
	}
	return utf8.Valid(head)
}

// textStartingWith accepts text whose first byte, after a UTF-8 BOM and
// white space, is one of first.
func textStartingWith(first string) func([]byte) bool {
	return func(head []byte) bool {
		if !text(head) {
			return false
		}
		t := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF")), " \t\r\n")
		return len(t) > 0 && strings.IndexByte(first, t[0]) >= 0
	}
}

const ooxml = "application/vnd.openxmlformats-officedocument."

// FileTypes is the allowed-type table of the contract.
var FileTypes = []FileType{
	{"jpeg", []string{".jpg", ".jpeg"}, []string{"image/jpeg"}, magic("\xFF\xD8\xFF")},
	{"png", []string{".png"}, []string{"image/png"}, magic("\x89PNG")},
	{"gif", []string{".gif"}, []string{"image/gif"}, magic("GIF8")},
	{"webp", []string{".webp"}, []string{"image/webp"}, webp},
	{"bmp", []string{".bmp"}, []string{"image/bmp"}, magic("BM")},
	{"tiff", []string{".tif", ".tiff"}, []string{"image/tiff"}, magic("II*\x00", "MM\x00*")},
	{"pdf", []string{".pdf"}, []string{"application/pdf"}, magic("%PDF-")},
	{"doc", []string{".doc"}, []string{"application/msword"}, magic("\xD0\xCF\x11\xE0")},
	{"xls", []string{".xls"}, []string{"application/vnd.ms-excel"}, magic("\xD0\xCF\x11\xE0")},
	{"ppt", []string{".ppt"}, []string{"application/vnd.ms-powerpoint"}, magic("\xD0\xCF\x11\xE0")},
	{"docx", []string{".docx"}, []string{ooxml + "wordprocessingml.document"}, magic("PK\x03\x04")},
	{"xlsx", []string{".xlsx"}, []string{ooxml + "spreadsheetml.sheet"}, magic("PK\x03\x04")},
	{"pptx", []string{".pptx"}, []string{ooxml + "presentationml.presentation"}, magic("PK\x03\x04")},
	{"txt", []string{".txt"}, []string{"text/plain"}, text},
	{"csv", []string{".csv"}, []string{"text/csv"}, text},
	{"rtf", []string{".rtf"}, []string{"application/rtf", "text/rtf"}, magic(`{\rtf`)},
	{"xml", []string{".xml"}, []string{"application/xml", "text/xml"}, textStartingWith("<")},
	{"json", []string{".json"}, []string{"application/json"}, textStartingWith("{[")},
}

// IsImage reports whether t is one of the image types.
func (t FileType) IsImage() bool {
	for _, m := range t.MediaTypes {
		if strings.HasPrefix(m, "image/") {
			return true
		}
	}
	return false
}

// MediaType normalises a declared content type: lower case, parameters
// such as "; charset=utf-8" dropped.
func MediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// DetectType returns the allowed type that the filename extension, the
// declared content type and the leading bytes all agree on, or
// ErrFileTypeNotAllowed with a message saying which of the three disagreed.
func DetectType(filename, contentType string, head []byte) (FileType, error) {
	ext := strings.ToLower(path.Ext(filename))
	mt := MediaType(contentType)
	var byExt []FileType
	for _, t := range FileTypes {
		for _, e := range t.Extensions {
			if e == ext {
				byExt = append(byExt, t)
			}
		}
	}
	if len(byExt) == 0 {
		return FileType{}, ErrFileTypeNotAllowed.WithMessage("File type not allowed: extension %q is not an allowed type", ext)
	}
	for _, t := range byExt {
		for _, m := range t.MediaTypes {
			if m != mt {
				continue
			}
			if !t.matches(head) {
				return FileType{}, ErrFileTypeNotAllowed.WithMessage("File type not allowed: the content is not %s", t.Name)
			}
			return t, nil
		}
	}
	return FileType{}, ErrFileTypeNotAllowed.WithMessage("File type not allowed: contentType %q does not match extension %q", mt, ext)
}
