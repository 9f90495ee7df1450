package test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/clamd"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/clamdtest"
	"github.com/carebridge/carebridge/test/logtest"
)

// scanning starts a real clamd for the test and returns the edit of an
// app's config that scans every upload with it.
func scanning(t *testing.T) (*clamdtest.Daemon, func(*app.Config)) {
	t.Helper()
	d := clamdtest.Start(t)
	network, address, err := clamd.ParseAddress(d.Address())
	if err != nil {
		t.Fatal(err)
	}
	return d, func(c *app.Config) { c.Scanner = &clamd.Config{Network: network, Address: address} }
}

// eicarIn is the EICAR test string inside a file of an allowed type.
func eicarIn(t *testing.T, kind string) []byte {
	switch kind {
	case "txt":
		return clamdtest.EICAR()
	case "png":
		return append(append([]byte("\x89PNG\r\n\x1a\n"), clamdtest.EICAR()...), bytes.Repeat([]byte{7}, 1000)...)
	}
	t.Fatalf("no EICAR file of kind %s", kind)
	return nil
}

func TestIntegrationScan_MalwareIsRefusedAndNothingStays(t *testing.T) {
	w := newWorld(t, withS3)
	_, scan := scanning(t)
	s := w.start(scan)
	tok := w.token("alice")

	for _, encrypted := range []string{"false", "true"} {
		r := s.upload(tok, fileFields("letter.txt", "text/plain", eicarIn(t, "txt"), field{"isEncrypted", encrypted})...)
		if r.status != 422 || r.errorCode(t) != "malware_detected" || !strings.Contains(r.json(t)["message"].(string), clamdtest.SigEICAR) {
			t.Fatalf("EICAR, encrypted %s: %d %s", encrypted, r.status, r.body)
		}
	}
	if w.rows() != 0 || w.objects() != 0 {
		t.Fatalf("%d rows and %d objects stayed after refusals", w.rows(), w.objects())
	}
	var refused int
	for _, e := range auditRows(t, w.db) {
		if e.action == "blob.upload" {
			if e.outcome != "error" || e.status != 422 || !strings.Contains(e.detail, `"signature": "`+clamdtest.SigEICAR+`"`) {
				t.Errorf("audit event of a refused upload: %+v", e)
			}
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("%d audit events of refused uploads, want 2", refused)
	}
	page := string(s.do("GET", "/metrics", "", nil).body)
	if v, _ := metricValue(page, `carebridge_scans_total{result="infected"}`); v != 2 {
		t.Fatalf("infected scans counted %v, want 2", v)
	}
}

// cleanFiles is a small clean file of every allowed type.
func cleanFiles(t *testing.T) map[string][]byte {
	ole := "\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"
	files := map[string][]byte{
		"a.jpg":  []byte("\xFF\xD8\xFF\xE0\x00\x10JFIF\x00" + strings.Repeat("\x00", 500)),
		"a.png":  []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("\x01\x02", 300)),
		"a.gif":  []byte("GIF89a" + strings.Repeat("\x00", 300)),
		"a.webp": []byte("RIFF\x10\x00\x00\x00WEBPVP8 " + strings.Repeat("\x00", 300)),
		"a.bmp":  []byte("BM\x36\x00" + strings.Repeat("\x00", 300)),
		"a.tif":  []byte("II*\x00" + strings.Repeat("\x00", 300)),
		"a.pdf":  []byte("%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"),
		"a.doc":  []byte(ole + strings.Repeat("\x00", 504)),
		"a.xls":  []byte(ole + strings.Repeat("\x00", 504)),
		"a.ppt":  []byte(ole + strings.Repeat("\x00", 504)),
		"a.txt":  []byte("Referral letter: please see the patient next week.\n"),
		"a.csv":  []byte("date,reading\n2026-11-01,5.4\n"),
		"a.rtf":  []byte(`{\rtf1\ansi Referral letter\par}`),
		"a.xml":  []byte(`<?xml version="1.0"?><letter>Referral</letter>`),
		"a.json": []byte(`{"letter":"Referral"}`),
	}
	for _, name := range []string{"a.docx", "a.xlsx", "a.pptx"} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		f, err := zw.Create("[Content_Types].xml")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(f, `<?xml version="1.0"?><Types/>`)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		files[name] = buf.Bytes()
	}
	return files
}

var mediaOf = map[string]string{
	"a.jpg": "image/jpeg", "a.png": "image/png", "a.gif": "image/gif", "a.webp": "image/webp", "a.bmp": "image/bmp",
	"a.tif": "image/tiff", "a.pdf": "application/pdf", "a.doc": "application/msword", "a.xls": "application/vnd.ms-excel",
	"a.ppt": "application/vnd.ms-powerpoint", "a.txt": "text/plain", "a.csv": "text/csv", "a.rtf": "application/rtf",
	"a.xml": "application/xml", "a.json": "application/json",
	"a.docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"a.xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"a.pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}

func TestIntegrationScan_CleanFilesOfEveryAllowedTypeAreKept(t *testing.T) {
	w := newWorld(t)
	_, scan := scanning(t)
	s := w.start(scan)
	tok := w.token("alice")
	files := cleanFiles(t)
	if len(files) != len(mediaOf) {
		t.Fatalf("%d files for %d types", len(files), len(mediaOf))
	}
	for name, content := range files {
		for _, encrypted := range []string{"false", "true"} {
			r := s.upload(tok, fileFields(name, mediaOf[name], content, field{"isEncrypted", encrypted})...)
			if r.status != 201 {
				t.Errorf("%s (encrypted %s): %d %s", name, encrypted, r.status, r.body)
				continue
			}
			id := r.json(t)["id"]
			if d := s.do("GET", fmt.Sprintf("/cloud-blob/download/%v", id), tok, nil); !bytes.Equal(d.body, content) {
				t.Errorf("%s: the download differs from the upload", name)
			}
		}
	}
	if n := w.rows(); n != 2*len(files) {
		t.Fatalf("%d rows, want %d", n, 2*len(files))
	}
	page := string(s.do("GET", "/metrics", "", nil).body)
	if v, _ := metricValue(page, `carebridge_scans_total{result="clean"}`); v != float64(2*len(files)) {
		t.Fatalf("clean scans counted %v, want %d", v, 2*len(files))
	}
}

func TestIntegrationScan_ALogoCarryingMalwareIsRefused(t *testing.T) {
	w := newWorld(t, withS3)
	_, scan := scanning(t)
	var log logtest.Buffer
	s := w.startLogging(&log, scan)
	id := w.createBusiness("owner")
	tok := w.token("owner")
	before := w.count("business_locations")

	r := s.bdo("POST", "/business/location/"+id+"/", tok, locationForm(t, false, general, address, eicarIn(t, "png"), "logo.png", "image/png"))
	if r.status != 422 || r.errorCode(t) != "malware_detected" {
		t.Fatalf("location with an infected logo: %d %s", r.status, r.body)
	}
	if w.count("business_locations") != before || w.rows() != 0 || w.objects() != 0 {
		t.Fatalf("a refused logo left a location, a row or an object")
	}
	// Location changes are not in the audit trail (the contract's list);
	// the refusal is in the log, with the signature and not the filename.
	line := ""
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "malware detected") {
			line = l
		}
	}
	if !strings.Contains(line, `"signature":"`+clamdtest.SigEICAR+`"`) || !strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, "logo.png") {
		t.Fatalf("log line of the refusal: %q", line)
	}
	// The same location with a clean logo is created.
	r = s.bdo("POST", "/business/location/"+id+"/", tok, locationForm(t, false, general, address, pngLogo, "logo.png", "image/png"))
	if r.status != 201 {
		t.Fatalf("location with a clean logo: %d %s", r.status, r.body)
	}
}

func TestIntegrationScan_ScannerDownRefusesThenRecovers(t *testing.T) {
	w := newWorld(t, withS3)
	d, scan := scanning(t)
	// /readyz is asked again right after clamd stops: no cached answer.
	s := w.start(func(c *app.Config) { scan(c); c.ReadyTTL = time.Nanosecond })
	tok := w.token("alice")
	clean := cleanFiles(t)["a.pdf"]

	if r := s.upload(tok, fileFields("a.pdf", "application/pdf", clean)...); r.status != 201 {
		t.Fatalf("upload with the scanner up: %d %s", r.status, r.body)
	}
	ready := s.do("GET", "/readyz", "", nil)
	if sc, _ := ready.json(t)["scanner"].(map[string]any); sc["status"] != "up" || sc["maxConnections"] != float64(8) {
		t.Fatalf("readyz with the scanner up: %s", ready.body)
	}
	if strings.Contains(string(ready.body), "ClamAV") || strings.Contains(string(ready.body), "version") {
		t.Fatalf("readyz tells an anonymous caller the scanner's version: %s", ready.body)
	}

	// clamd dies while a file streams to it: the upload is refused.
	const size = 3 << 20
	var once sync.Once
	midway := &hook{r: &pattern{n: size}, at: size / 2, fn: func() { once.Do(d.Stop) }}
	if status, body := s.streamUpload(tok, "scan.jpg", "image/jpeg", size, midway); status != 503 || !strings.Contains(string(body), "scanner_unavailable") {
		t.Fatalf("upload while clamd stops: %d %s", status, body)
	}
	for _, encrypted := range []string{"false", "true"} {
		r := s.upload(tok, fileFields("a.pdf", "application/pdf", clean, field{"isEncrypted", encrypted})...)
		if r.status != 503 || r.errorCode(t) != "scanner_unavailable" {
			t.Fatalf("upload with the scanner down: %d %s", r.status, r.body)
		}
	}
	r := s.do("GET", "/readyz", "", nil)
	if sc, _ := r.json(t)["scanner"].(map[string]any); r.status != 200 || sc["status"] != "unavailable" {
		t.Fatalf("readyz with the scanner down: %d %s", r.status, r.body)
	}
	if w.rows() != 1 || w.objects() != 1 { // the upload before clamd stopped
		t.Fatalf("%d rows, %d objects after refusals; want the first upload only", w.rows(), w.objects())
	}

	d.Restart()
	if r := s.upload(tok, fileFields("a.pdf", "application/pdf", clean)...); r.status != 201 {
		t.Fatalf("upload after the scanner came back: %d %s", r.status, r.body)
	}
	page := string(s.do("GET", "/metrics", "", nil).body)
	if v, _ := metricValue(page, `carebridge_scans_total{result="error"}`); v != 3 {
		t.Fatalf("failed scans counted %v, want 3", v)
	}
}

// hook reads r and calls fn once at byte at.
type hook struct {
	r   io.Reader
	at  int64
	off int64
	fn  func()
}

func (h *hook) Read(p []byte) (int, error) {
	if h.off < h.at && h.off+int64(len(p)) > h.at {
		p = p[:h.at-h.off]
	}
	if h.off == h.at {
		h.fn()
	}
	n, err := h.r.Read(p)
	h.off += int64(n)
	return n, err
}

// pattern yields n bytes of a JPEG header and a repeating pattern, without
// holding them.
type pattern struct{ n, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if int64(len(b)) > p.n-p.off {
		b = b[:p.n-p.off]
	}
	for i := range b {
		b[i] = byte((p.off + int64(i)) * 7)
	}
	if p.off == 0 && len(b) >= 4 {
		copy(b, "\xFF\xD8\xFF\xE0")
	}
	p.off += int64(len(b))
	return len(b), nil
}

// streamUpload uploads size bytes read from file, streamed: the test never
// holds them.
func (s *server) streamUpload(token, name, contentType string, size int64, file io.Reader) (int, []byte) {
	s.t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, f := range [][2]string{{"originalFilename", name}, {"contentType", contentType}, {"fileSize", fmt.Sprint(size)}} {
			mw.WriteField(f[0], f[1])
		}
		part, _ := mw.CreateFormFile("file", name)
		if _, err := io.Copy(part, file); err != nil {
			pw.CloseWithError(err)
			return
		}
		pw.CloseWithError(mw.Close())
	}()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", s.base+"/cloud-blob/upload", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// A 200 MiB upload is scanned on its way to the store while the heap stays
// flat: neither the service nor the scan holds the file.
func TestIntegrationScan_ALargeUploadIsScannedWithFlatMemory(t *testing.T) {
	const size = 200 << 20
	w := newWorld(t, withS3)
	_, scan := scanning(t)
	s := w.start(func(c *app.Config) { scan(c); c.MaxUploadBytes = size })

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	status, body := s.streamUpload(w.token("alice"), "scan.jpg", "image/jpeg", size, &pattern{n: size})
	close(stop)
	sampled.Wait()
	if status != 201 || !strings.Contains(string(body), fmt.Sprintf(`"fileSize":%d`, size)) {
		t.Fatalf("200 MiB upload: %d %s", status, body)
	}
	grew := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("heap in use grew by %.1f MiB at most during a %d MiB upload", float64(grew)/(1<<20), size>>20)
	if grew > 64<<20 {
		t.Fatalf("the heap grew by %d MiB during a %d MiB upload: the file is held", grew>>20, size>>20)
	}
	page := string(s.do("GET", "/metrics", "", nil).body)
	if v, _ := metricValue(page, `carebridge_scans_total{result="clean"}`); v != 1 {
		t.Fatalf("clean scans counted %v, want 1", v)
	}
}
