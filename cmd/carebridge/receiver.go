package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/carebridge/carebridge/adapters/webhook"
)

const receiverUsage = `usage: carebridge dev-receiver --secret whsec_… [--addr 127.0.0.1:9000]`

// maxEventBody bounds what the receiver reads of a delivery: events are
// thin.
const maxEventBody = 1 << 20

// devReceiver is a webhook receiver for trying events locally: it checks
// each delivery's signature with the subscription's secret, prints the
// body of each good one as a line on stdout and answers 204; a bad one is
// answered 401 and said on stderr. It serves until ctx is done.
func devReceiver(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("dev-receiver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:9000", "address to listen on")
	secretText := fs.String("secret", "", "the secret add-webhook printed")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v\n%s", err, receiverUsage)
	}
	secret, err := webhook.ParseSecret(*secretText)
	if err != nil {
		return fmt.Errorf("--secret: %v\n%s", err, receiverUsage)
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dev-receiver: listening on http://%s/, printing each verified event\n", l.Addr())
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := webhook.Verify(secret, r.Header, body, time.Now()); err != nil {
			fmt.Fprintf(os.Stderr, "dev-receiver: refused %s: %v\n", r.Header.Get("webhook-id"), err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		fmt.Fprintf(stdout, "%s\n", body)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
