package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// errTrickleStopped ends a trickling upload's body.
var errTrickleStopped = errors.New("trickle stopped by the test")

// trickle is one slow upload: its form and the first 256 KiB of its file
// at once, then one byte every tick; its file never completes. started is
// closed once those 256 KiB and two ticks' bytes went out; answered gets
// the status the upload ended with (0: the request failed) once stop was
// closed.
type trickle struct {
	started  chan struct{}
	answered chan int
}

func (s *server) trickle(token string, tick time.Duration, stop <-chan struct{}) *trickle {
	const head = 256 << 10
	tr := &trickle{started: make(chan struct{}), answered: make(chan int, 1)}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		var once sync.Once
		start := func() { once.Do(func() { close(tr.started) }) }
		defer start() // a body cut short (an early answer) starts the test too, which then sees the answer
		for _, f := range [][2]string{{"originalFilename", "slow.txt"}, {"contentType", "text/plain"}, {"fileSize", fmt.Sprint(head + 1<<20)}} {
			mw.WriteField(f[0], f[1])
		}
		part, _ := mw.CreateFormFile("file", "slow.txt")
		if _, err := part.Write([]byte(strings.Repeat("slow but steady ", head/16))); err != nil {
			return
		}
		for i := 0; ; i++ {
			if i == 2 {
				start()
			}
			select {
			case <-stop:
				pw.CloseWithError(errTrickleStopped)
				return
			case <-time.After(tick):
			}
			if _, err := part.Write([]byte("z")); err != nil {
				return
			}
		}
	}()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", s.base+"/cloud-blob/upload", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tr.answered <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tr.answered <- resp.StatusCode
	}()
	return tr
}

// timedUpload uploads a small text file and returns its answer and how
// long it took, in a goroutine of its own.
func (s *server) timedUpload(token string, content []byte) <-chan timedResponse {
	out := make(chan timedResponse, 1)
	go func() {
		body, ct := multipartBody(s.t, fileFields("small.txt", "text/plain", content)...)
		req, _ := http.NewRequest("POST", s.base+"/cloud-blob/upload", body)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- timedResponse{err: err, took: time.Since(start)}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- timedResponse{status: resp.StatusCode, body: b, took: time.Since(start)}
	}()
	return out
}

type timedResponse struct {
	status int
	body   []byte
	err    error
	took   time.Duration
}

// Twelve uploads that trickle a byte at a time (more than the scanner
// client's eight connections) do not stop a small upload of another
// caller: it is scanned and answered while they are still trickling, and
// /readyz shows how busy the scanner is.
func TestIntegrationScan_SlowUploadsDoNotStopOtherUploads(t *testing.T) {
	const (
		slow = 12
		tick = 100 * time.Millisecond // the 2 s, scaled down
		// patience is how long the trickles go on waiting for the small
		// upload's answer: not a latency target (passing takes far less,
		// and the test asserts an order, not a time), only a bound on a
		// failing run, which would otherwise wait for ever (the build
		// before the fix waited for a trickle to end before it scanned
		// the small upload). It is generous so that a slow machine under
		// -race never fails a correct build.
		patience = time.Minute
	)
	w := newWorld(t)
	_, scan := scanning(t)
	s := w.start(scan)
	small := []byte("Referral letter: see the patient soon!!\n") // 40 bytes
	if len(small) != 40 {
		t.Fatalf("the small file has %d bytes", len(small))
	}

	<-s.timedUpload(w.token("bob"), small) // warms the connection, the key set and clamd up
	alone := <-s.timedUpload(w.token("bob"), small)
	if alone.status != 201 {
		t.Fatalf("small upload alone: %d %v %s", alone.status, alone.err, alone.body)
	}

	stop := make(chan struct{})
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			close(stop)
		}
	}
	t.Cleanup(stopAll)
	var trickles []*trickle
	for i := range slow {
		trickles = append(trickles, s.trickle(w.token(fmt.Sprintf("slow%d", i)), tick, stop))
	}
	for _, tr := range trickles {
		<-tr.started
		select {
		case status := <-tr.answered:
			t.Fatalf("a trickling upload was answered before it had sent its bytes: %d", status)
		default:
		}
	}

	answer := s.timedUpload(w.token("bob"), small)
	var beside timedResponse
	select {
	case beside = <-answer:
	case <-time.After(patience):
		stopAll()
		beside = <-answer
		t.Errorf("a 40-byte upload beside %d trickling uploads was answered only after they were stopped (%d after %.1f s)",
			slow, beside.status, beside.took.Seconds())
	}
	ended := 0
	for _, tr := range trickles {
		select {
		case <-tr.answered:
			ended++
			tr.answered <- 0 // for the wait below
		default:
		}
	}
	if ended > 0 {
		t.Errorf("%d of the %d trickling uploads ended before the small upload's answer", ended, slow)
	}
	if beside.status != 201 {
		t.Fatalf("small upload beside %d trickling uploads: %d %v %s", slow, beside.status, beside.err, beside.body)
	}
	t.Logf("a 40-byte upload took %.1f ms alone and %.1f ms beside %d trickling uploads", ms(alone.took), ms(beside.took), slow)

	// /readyz shows the scanner's connections; the trickles hold none.
	r := s.do("GET", "/readyz", "", nil)
	sc, _ := r.json(t)["scanner"].(map[string]any)
	if r.status != 200 || sc["status"] != "up" || sc["maxConnections"] != float64(8) || sc["connectionsInUse"] != float64(0) || sc["waiting"] != float64(0) {
		t.Errorf("readyz beside %d trickling uploads: %d %s", slow, r.status, r.body)
	}

	page := string(s.do("GET", "/metrics", "", nil).body)
	if v, ok := metricValue(page, "carebridge_scanner_connections_in_use"); !ok || v != 0 {
		t.Errorf("scanner connections in use beside %d trickling uploads: %v (%v)", slow, v, ok)
	}

	stopAll()
	for _, tr := range trickles {
		<-tr.answered
	}
	if n := w.rows(); n != 3 {
		t.Fatalf("%d rows, want the three small uploads'", n)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
