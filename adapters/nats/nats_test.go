package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/event"
	"github.com/carebridge/carebridge/test/testenv"
)

// The integration tests share the one stream the contract names: each
// deletes it before and after, so none of them may run in parallel (no
// t.Parallel here), and no other package's tests may use the stream.

// DefaultTestURL is the server the tests use when NATS_URL is unset;
// `make test` starts it (scripts/ensure-services.sh).
const DefaultTestURL = "nats://127.0.0.1:4222"

func testURL() string {
	if u := os.Getenv("NATS_URL"); u != "" {
		return u
	}
	return DefaultTestURL
}

// fresh connects to the test server on a connection of its own, deletes
// the stream now and when the test ends, and returns the connection's
// JetStream; it skips (or, with CI set, fails) when the server or its
// JetStream is unreachable.
func fresh(t *testing.T) jetstream.JetStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	missing := func(err error) {
		t.Helper()
		testenv.Missing(t, fmt.Sprintf("NATS with JetStream at %s unreachable (%v)", testURL(), err),
			"run make test, which starts it (scripts/ensure-services.sh)")
	}
	nc, err := natsgo.Connect(testURL(), natsgo.Timeout(2*time.Second))
	if err != nil {
		missing(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		missing(err)
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, StreamName); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
		return nil
	}
	if err := drop(); err != nil {
		t.Fatalf("delete stream: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("delete stream: %v", err)
		}
	})
	return js
}

// newPublisher returns a Publisher of the test server, closed when the
// test ends.
func newPublisher(t *testing.T) *Publisher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, testURL(), nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// messages returns n events with ids unique to this call, their types
// taken in turn from core.EventTypes.
func messages(n int) []event.Message {
	var b [6]byte
	_, _ = rand.Read(b[:])
	run := hex.EncodeToString(b[:])
	msgs := make([]event.Message, n)
	for i := range msgs {
		id := fmt.Sprintf("evt_%s_%04d", run, i)
		typ := core.EventTypes[i%len(core.EventTypes)]
		msgs[i] = event.Message{
			Seq:  int64(i + 1),
			ID:   id,
			Type: typ,
			Body: fmt.Appendf(nil, `{"id":%q,"type":%q,"data":{"n":%d}}`, id, typ, i),
		}
	}
	return msgs
}

func publish(t *testing.T, p *Publisher, msgs []event.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.Publish(ctx, msgs); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

func streamInfo(t *testing.T, js jetstream.JetStream) *jetstream.StreamInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	return info
}

// read returns every message of the stream, oldest first, through an
// ordered consumer.
func read(t *testing.T, js jetstream.JetStream, n int) []jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	var got []jetstream.Msg
	for len(got) < n {
		batch, err := c.Fetch(min(n-len(got), 256), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		before := len(got)
		for m := range batch.Messages() {
			got = append(got, m)
		}
		if err := batch.Error(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if len(got) == before {
			t.Fatalf("read %d of %d messages, then none came", len(got), n)
		}
	}
	return got
}

func TestIntegrationNew_CreatesMissingStream(t *testing.T) {
	js := fresh(t)
	newPublisher(t)

	cfg := streamInfo(t, js).Config
	if len(cfg.Subjects) != 1 || cfg.Subjects[0] != "carebridge.events.>" {
		t.Errorf("subjects = %q, want [carebridge.events.>]", cfg.Subjects)
	}
	if cfg.Storage != jetstream.FileStorage || cfg.Retention != jetstream.LimitsPolicy {
		t.Errorf("storage %v, retention %v; want file, limits", cfg.Storage, cfg.Retention)
	}
	if cfg.MaxAge != 7*24*time.Hour || cfg.Duplicates != 2*time.Minute {
		t.Errorf("max age %v, duplicate window %v; want 168h, 2m", cfg.MaxAge, cfg.Duplicates)
	}
}

func TestIntegrationNew_KeepsExistingStream(t *testing.T) {
	js := fresh(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	marker := jetstream.StreamConfig{
		Name:     StreamName,
		Subjects: []string{"carebridge.events.>"},
		Storage:  jetstream.MemoryStorage,
		MaxMsgs:  12345,
		MaxAge:   time.Hour,
	}
	if _, err := js.CreateStream(ctx, marker); err != nil {
		t.Fatal(err)
	}
	newPublisher(t)

	cfg := streamInfo(t, js).Config
	if cfg.MaxMsgs != 12345 || cfg.MaxAge != time.Hour || cfg.Storage != jetstream.MemoryStorage {
		t.Errorf("existing stream changed: max msgs %d, max age %v, storage %v", cfg.MaxMsgs, cfg.MaxAge, cfg.Storage)
	}
}

func TestIntegrationPublish_DeliversOnTypeSubjects(t *testing.T) {
	js := fresh(t)
	p := newPublisher(t)
	msgs := messages(3)
	publish(t, p, msgs)

	got := read(t, js, 3)
	for i, m := range got {
		want := msgs[i]
		if m.Subject() != "carebridge.events."+string(want.Type) {
			t.Errorf("message %d subject %q, want carebridge.events.%s", i, m.Subject(), want.Type)
		}
		if string(m.Data()) != string(want.Body) {
			t.Errorf("message %d body %s, want %s", i, m.Data(), want.Body)
		}
		if id := m.Headers().Get("Nats-Msg-Id"); id != want.ID {
			t.Errorf("message %d Nats-Msg-Id %q, want %q", i, id, want.ID)
		}
		if ct := m.Headers().Get("Content-Type"); ct != "application/json" {
			t.Errorf("message %d Content-Type %q", i, ct)
		}
	}
}

func TestIntegrationPublish_RepublishedEventsAreStoredOnce(t *testing.T) {
	js := fresh(t)
	p := newPublisher(t)
	msgs := messages(3)
	publish(t, p, msgs)
	publish(t, p, msgs)
	// Another instance publishing the same events (one that died before
	// marking them published) is deduplicated too.
	publish(t, newPublisher(t), msgs)

	if n := streamInfo(t, js).State.Msgs; n != 3 {
		t.Errorf("stream holds %d messages, want 3", n)
	}
}

func TestIntegrationPublish_ManyBatchesAllArrive(t *testing.T) {
	js := fresh(t)
	p := newPublisher(t)
	msgs := messages(1000)
	for i := 0; i < len(msgs); i += 256 {
		publish(t, p, msgs[i:min(i+256, len(msgs))])
	}

	if n := streamInfo(t, js).State.Msgs; n != 1000 {
		t.Fatalf("stream holds %d messages, want 1000", n)
	}
	for i, m := range read(t, js, 1000) {
		if id := m.Headers().Get("Nats-Msg-Id"); id != msgs[i].ID {
			t.Fatalf("message %d is %q, want %q", i, id, msgs[i].ID)
		}
	}
}

func TestIntegrationPublish_CancelledContextFails(t *testing.T) {
	js := fresh(t)
	p := newPublisher(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	err := p.Publish(ctx, messages(3))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Publish = %v, want context.Canceled", err)
	}
	if n := streamInfo(t, js).State.Msgs; n != 0 {
		t.Errorf("stream holds %d messages, want 0", n)
	}
}

func TestIntegrationPublish_RefusesMessagesItCannotSendAsTheContractSays(t *testing.T) {
	js := fresh(t)
	p := newPublisher(t)
	for _, m := range []event.Message{
		{Seq: 1, ID: "", Type: core.AppointmentBooked, Body: []byte(`{}`)},
		{Seq: 2, ID: "evt_2", Type: "", Body: []byte(`{}`)},
		{Seq: 3, ID: "evt_3", Type: "appointment.*", Body: []byte(`{}`)},
		{Seq: 4, ID: "evt_4", Type: "appointment..booked", Body: []byte(`{}`)},
		{Seq: 5, ID: "evt_5", Type: "appointment booked", Body: []byte(`{}`)},
	} {
		if err := p.Publish(context.Background(), []event.Message{m}); err == nil {
			t.Errorf("Publish(%+v) succeeded", m)
		}
	}
	if n := streamInfo(t, js).State.Msgs; n != 0 {
		t.Errorf("stream holds %d messages, want 0", n)
	}
}

func TestNew_BadURLFailsPromptlyWithoutCredentials(t *testing.T) {
	for _, u := range []string{
		"nats://user:s3cret@127.0.0.1:1",
		"nats://s3cret@127.0.0.1:1",
		"nats://127.0.0.1:1,nats://user:s3cret@127.0.0.1:2",
		"nats://user:s3cret@[::1",
		"nats://user:s3cret@127.0.0.1:1\x7f",
	} {
		start := time.Now()
		p, err := New(context.Background(), u, nil)
		if err == nil {
			p.Close()
			t.Errorf("New(%q) succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("New(%q) error shows the secret: %v", u, err)
		}
		if !strings.Contains(err.Error(), "connect") {
			t.Errorf("New(%q) error does not say it could not connect: %v", u, err)
		}
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("New(%q) took %v", u, d)
		}
		t.Log(err)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ url, shown, secrets string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222", ""},
		{"nats://user:pw@h:4222", "nats://***@h:4222", "pw"},
		{"nats://tok@h:4222", "nats://***@h:4222", "tok"},
		{"nats://a:x@h1, nats://b:y@h2", "nats://***@h1,nats://***@h2", "x y"},
		{"nats://u:p@[::1", "nats://***@[::1", "u:p"},
	} {
		shown, secrets := redact(tc.url)
		if shown != tc.shown || strings.Join(secrets, " ") != tc.secrets {
			t.Errorf("redact(%q) = %q, %q; want %q, %q", tc.url, shown, secrets, tc.shown, tc.secrets)
		}
	}
}
