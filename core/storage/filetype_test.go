package storage

import (
	"errors"
	"testing"
)

func TestDetectType(t *testing.T) {
	ole := "\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"
	zip := "PK\x03\x04\x14\x00"
	ok := []struct{ file, ct, head, want string }{
		{"a.jpg", "image/jpeg", "\xFF\xD8\xFF\xE0", "jpeg"},
		{"A.JPEG", "IMAGE/JPEG", "\xFF\xD8\xFF\xDB", "jpeg"},
		{"a.png", "image/png", "\x89PNG\r\n\x1a\n", "png"},
		{"a.gif", "image/gif", "GIF89a", "gif"},
		{"a.webp", "image/webp", "RIFF\x10\x00\x00\x00WEBPVP8 ", "webp"},
		{"a.bmp", "image/bmp", "BM\x36\x00", "bmp"},
		{"a.tif", "image/tiff", "II*\x00", "tiff"},
		{"a.tiff", "image/tiff", "MM\x00*", "tiff"},
		{"a.pdf", "application/pdf", "%PDF-1.7", "pdf"},
		{"a.doc", "application/msword", ole, "doc"},
		{"a.xls", "application/vnd.ms-excel", ole, "xls"},
		{"a.ppt", "application/vnd.ms-powerpoint", ole, "ppt"},
		{"a.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", zip, "docx"},
		{"a.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", zip, "xlsx"},
		{"a.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation", zip, "pptx"},
		{"a.txt", "text/plain; charset=utf-8", "héllo wörld", "txt"},
		{"empty.txt", "text/plain", "", "txt"},
		{"a.csv", "text/csv", "a,b\n1,2\n", "csv"},
		{"a.rtf", "application/rtf", `{\rtf1\ansi`, "rtf"},
		{"a.rtf", "text/rtf", `{\rtf1`, "rtf"},
		{"a.xml", "application/xml", "<?xml version=\"1.0\"?>", "xml"},
		{"a.xml", "text/xml", "\xEF\xBB\xBF  <root/>", "xml"},
		{"a.json", "application/json", "\xEF\xBB\xBF \n {\"a\":1}", "json"},
		{"a.json", "application/json", "[1,2]", "json"},
		{"cut.txt", "text/plain", "ab\xC3", "txt"}, // sniff window ends inside a rune
	}
	for _, c := range ok {
		got, err := DetectType(c.file, c.ct, []byte(c.head))
		if err != nil || got.Name != c.want {
			t.Errorf("DetectType(%q, %q): got %q, %v; want %q", c.file, c.ct, got.Name, err, c.want)
		}
	}
	bad := []struct{ name, file, ct, head string }{
		{"extension not allowed", "a.exe", "application/octet-stream", "MZ"},
		{"no extension", "README", "text/plain", "hi"},
		{"html disguised as text type", "a.html", "text/plain", "<html>"},
		{"content type of another type", "a.png", "image/jpeg", "\x89PNG"},
		{"png bytes named jpg", "a.jpg", "image/jpeg", "\x89PNG"},
		{"exe bytes named pdf", "a.pdf", "application/pdf", "MZ\x90\x00"},
		{"text with a NUL byte", "a.txt", "text/plain", "ab\x00cd"},
		{"invalid UTF-8 text", "a.csv", "text/csv", "\xFF\xFE\xFDabc"},
		{"json that is not an object or array", "a.json", "application/json", "\"str\""},
		{"xml without a tag", "a.xml", "application/xml", "hello"},
		{"webp without WEBP tag", "a.webp", "image/webp", "RIFF\x10\x00\x00\x00AVI "},
		{"empty png", "a.png", "image/png", ""},
		{"docx type for xlsx name", "a.xlsx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", zip},
	}
	for _, c := range bad {
		if _, err := DetectType(c.file, c.ct, []byte(c.head)); !errors.Is(err, ErrFileTypeNotAllowed) {
			t.Errorf("%s: got %v, want file_type_not_allowed", c.name, err)
		}
	}
}

func TestParseContainer(t *testing.T) {
	for _, c := range []string{"uploads", "documents", "images", "temp", "archived"} {
		if got, err := ParseContainer(c); err != nil || string(got) != c {
			t.Errorf("ParseContainer(%q) = %q, %v", c, got, err)
		}
	}
	if got, err := ParseContainer(""); err != nil || got != ContainerUploads {
		t.Errorf("empty name: got %q, %v; want uploads", got, err)
	}
	for _, c := range []string{"Uploads", "../uploads", "other", "uploads "} {
		if _, err := ParseContainer(c); !errors.Is(err, ErrInvalidContainer) {
			t.Errorf("ParseContainer(%q): got %v, want invalid_container", c, err)
		}
	}
}

// FuzzDetectType: any input gives an allowed type whose extension, media
// type and magic agree, or ErrFileTypeNotAllowed; never a panic.
func FuzzDetectType(f *testing.F) {
	f.Add("a.png", "image/png", []byte("\x89PNG"))
	f.Add("a.json", "application/json", []byte("\xEF\xBB\xBF [1]"))
	f.Add("a.txt", "text/plain", []byte("ab\xC3"))
	f.Fuzz(func(t *testing.T, name, ct string, head []byte) {
		got, err := DetectType(name, ct, head)
		if err != nil {
			if !errors.Is(err, ErrFileTypeNotAllowed) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !got.matches(head) {
			t.Fatalf("accepted %q as %s but its bytes do not match", name, got.Name)
		}
	})
}
