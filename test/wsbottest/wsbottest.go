// Package wsbottest starts the WebSocket bot EHR of
// adapters/ehr/wsbot/wsbotserver for a test: the protocol, the store and
// the fault-injection knobs are documented there.
//
//	srv := wsbottest.Start(t, wsbottest.WithAuthorization("Bearer t0ken"))
//	id := srv.AddAgent(ehr.Agent{Name: "Ana Lopez"}, []ehr.Period{{Start: s, End: e}})
//	url := srv.URL() // ws://127.0.0.1:PORT/bot
package wsbottest

import (
	"testing"

	"github.com/carebridge/carebridge/adapters/ehr/wsbot/wsbotserver"
)

// Server is a running bot.
type Server = wsbotserver.Server

// Option configures Start.
type Option = wsbotserver.Option

// WithAuthorization makes the bot require this exact Authorization header
// on the handshake (see wsbotserver.WithAuthorization).
func WithAuthorization(value string) Option { return wsbotserver.WithAuthorization(value) }

// WithUnauthorizedInBand makes the bot answer each request of a wrong
// handshake with the error code unauthorized (see
// wsbotserver.WithUnauthorizedInBand).
func WithUnauthorizedInBand() Option { return wsbotserver.WithUnauthorizedInBand() }

// Start starts a bot on 127.0.0.1; it stops when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := wsbotserver.Start(t.Context(), opts...)
	if err != nil {
		t.Fatalf("wsbottest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// WithoutRecords makes the bot answer records.search with unknown_action
// (see wsbotserver.WithoutRecords).
func WithoutRecords() Option { return wsbotserver.WithoutRecords() }

// WithoutChanges makes the bot answer appointments.changes with
// unknown_action (see wsbotserver.WithoutChanges).
func WithoutChanges() Option { return wsbotserver.WithoutChanges() }
