package test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
)

func TestHardening_StalledUploadIsCutOffWithoutBlockingOthers(t *testing.T) {
	w := newWorld(t, withS3)
	s := w.start(func(c *app.Config) { c.StallTimeout = 300 * time.Millisecond })
	alice := w.token("alice")

	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body, ct := multipartBody(t, fileFields("a.txt", "text/plain", []byte(strings.Repeat("x", 100000)))...)
	half := body.Bytes()[:body.Len()/2]
	fmt.Fprintf(conn, "POST /cloud-blob/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", alice, ct, body.Len())
	conn.Write(half) // and then nothing more

	// Meanwhile another client is served at once.
	if r := s.do("GET", "/healthz", "", nil); r.status != 200 {
		t.Fatalf("healthz during a stalled upload: %d", r.status)
	}

	// The server's read time-out is 60 s: an answer or a close before this
	// 30 s deadline is the 300 ms stall time-out's doing.
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the stalled upload was held until the client gave up")
	}
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("stalled upload answered %d", resp.StatusCode)
		}
	}
	if w.rows() != 0 || w.objects() != 0 {
		t.Fatal("a stalled upload left something behind")
	}
}

func TestHardening_OversizedHeadersAre431(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	r := s.do("GET", "/healthz", "", nil, "X-Padding", strings.Repeat("a", 80<<10))
	if r.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("got %d", r.status)
	}
}
