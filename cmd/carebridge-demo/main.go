// Command carebridge-demo runs the demo EHR systems of `make run` on
// loopback (package demoehr: a FHIR R4 server and a WebSocket bot
// seeded with synthetic people and practitioners) until it is
// interrupted.
//
//	EHR_CREDENTIALS_KEY=… carebridge-demo --dir data/demo [--medplum DIR] \
//		[--fhir-business UUID --bot-business UUID]
//
// Without --medplum (no Node.js) only the bot runs, and it answers the
// appointment endpoints too. With the two businesses (the demo's two
// practices) each system is bound to its practice in the EHR systems file
// (without the FHIR demo the bot serves both). Once everything is up, DIR/demo.env holds the
// variables `make run` reads (EHR_CONFIG and the demo's ids); it is removed
// again on exit, with DIR/demo.pid (which `make stop` reads).
//
// The integration EHRs are polled by EHR sync every
// demoehr.SyncInterval. In another terminal, while the demo runs,
//
//	carebridge-demo front-desk [--dir data/demo] [--id ID] book|arrive|move|cancel
//
// changes an appointment directly in the demo FHIR server, as its own
// screens do (book: a new one; the others: appointment ID, else the booked
// one changed last), and Carebridge publishes the change with origin
// "ehr". It reads DIR/ehr.yaml with EHR_CREDENTIALS_KEY, else the key in
// DIR/credentials.key (where `make run` keeps it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/cmd/carebridge-demo/demoehr"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "carebridge-demo:", err)
		os.Exit(1)
	}
}

// run is the command: front-desk, or the demo until ctx is done.
func run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "front-desk" {
		return frontDesk(ctx, args[1:])
	}
	dir, medplum, p, err := parseFlags(args)
	if err != nil {
		return err
	}
	key, err := keyring.ParseKey(os.Getenv("EHR_CREDENTIALS_KEY"))
	if err != nil {
		return fmt.Errorf("EHR_CREDENTIALS_KEY: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	envFile, pidFile := filepath.Join(abs, "demo.env"), filepath.Join(abs, "demo.pid")
	if err := prepareDir(abs, envFile, pidFile); err != nil {
		return err
	}
	defer os.Remove(pidFile)
	defer os.Remove(envFile)

	d, err := demoehr.Start(ctx, demoehr.Config{Dir: abs, Medplum: medplum, Key: key, Practices: p})
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting: a normal stop
		}
		return err
	}
	defer d.Close()
	// Written through a temporary file: `make run` waits for it to appear
	// and must never read half of it.
	if err := os.WriteFile(envFile+".tmp", []byte(demoEnv(d)), 0o600); err != nil {
		return err
	}
	if err := os.Rename(envFile+".tmp", envFile); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "carebridge-demo: %s; EHR systems file %s\n", d.Summary(), d.File)
	<-ctx.Done()
	return nil
}

// parseFlags reads the demo's flags: its directory, Medplum's and the
// practices the two systems serve (both or neither).
func parseFlags(args []string) (dir, medplum string, p demoehr.Practices, err error) {
	fs := flag.NewFlagSet("carebridge-demo", flag.ContinueOnError)
	fs.StringVar(&dir, "dir", "data/demo", "where to write the EHR systems file, demo.env and demo.pid")
	fs.StringVar(&medplum, "medplum", "", "install directory of scripts/install-medplum.sh (empty: no FHIR demo)")
	fs.StringVar(&p.FHIR, "fhir-business", "", "the practice (business UUID) the FHIR server serves (with --bot-business)")
	fs.StringVar(&p.Bot, "bot-business", "", "the practice (business UUID) the bot serves (with --fhir-business)")
	if err := fs.Parse(args); err != nil {
		return "", "", p, err
	}
	if (p.FHIR == "") != (p.Bot == "") {
		return "", "", p, errors.New("--fhir-business and --bot-business go together")
	}
	return dir, medplum, p, nil
}

// prepareDir makes dir, removes a demo.env left from an earlier run and
// writes this process's id into demo.pid.
func prepareDir(dir, envFile, pidFile string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// A stale demo.env would tell the waiting scripts the demo is up.
	if err := os.Remove(envFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(pidFile, []byte(fmt.Sprintln(os.Getpid())), 0o600)
}

// demoEnv is the content of demo.env: the variables `make run` reads.
func demoEnv(d *demoehr.Demo) string {
	name, zone := d.Agent()
	env := fmt.Sprintf("EHR_CONFIG=%s\nDEMO_INTEGRATION=%s\nDEMO_AGENT_ID=%s\nDEMO_AGENT_NAME=%q\nDEMO_AGENT_TZ=%s\nDEMO_FAMILY=%s\nDEMO_GIVEN=%s\nDEMO_SYNC_INTERVAL=%s\n",
		d.File, d.Integration, d.AgentID, name, zone, d.BothFamily, d.BothGiven, demoehr.SyncInterval)
	// The matching cases (the family name a search finds each by) and the
	// probable pair's two records, which `make run` prints a link of.
	env += fmt.Sprintf("DEMO_TYPO_FAMILY=%s\nDEMO_NAMESAKES_FAMILY=%s\nDEMO_HOUSEHOLD_FAMILY=%s\nDEMO_PROBABLE_FAMILY=%s\n",
		demoehr.CaseFamily(demoehr.CaseTypo), demoehr.CaseFamily(demoehr.CaseNamesakes),
		demoehr.CaseFamily(demoehr.CaseHousehold), demoehr.CaseFamily(demoehr.CaseProbable))
	for i, r := range d.Probable {
		env += fmt.Sprintf("DEMO_LINK_SOURCE_%d=%s\nDEMO_LINK_PATIENT_%d=%s\n", i+1, r.Source, i+1, r.PatientID)
	}
	return env
}

// frontDesk is `carebridge-demo front-desk`: one change made directly in
// the running demo's FHIR server.
func frontDesk(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("carebridge-demo front-desk", flag.ContinueOnError)
	dir := fs.String("dir", "data/demo", "the running demo's --dir")
	id := fs.String("id", "", "the appointment to change (default: the booked one changed last)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("front-desk: name one change: book, arrive, move or cancel")
	}
	action := fs.Arg(0)
	key, err := demoKey(*dir)
	if err != nil {
		return err
	}
	desk, err := demoehr.OpenFrontDesk(filepath.Join(*dir, "ehr.yaml"), key)
	if err != nil {
		return fmt.Errorf("front-desk: %w", err)
	}
	c, err := desk.Do(ctx, action, *id)
	if err != nil {
		return fmt.Errorf("front-desk %s: %w", action, err)
	}
	fmt.Printf("%s: Appointment/%s, status %s, %s to %s; Carebridge publishes %s with origin \"ehr\" at its next poll (every %s)\n",
		demoehr.FHIRName, c.ID, c.Status, c.Start.Format(time.RFC3339), c.End.Format(time.RFC3339),
		demoehr.FrontDeskActions[action], demoehr.SyncInterval)
	return nil
}

// demoKey is the key of the demo's enc:v1: secrets: EHR_CREDENTIALS_KEY,
// else the one `make run` keeps in dir/credentials.key.
func demoKey(dir string) ([]byte, error) {
	if v := os.Getenv("EHR_CREDENTIALS_KEY"); v != "" {
		k, err := keyring.ParseKey(v)
		if err != nil {
			return nil, fmt.Errorf("EHR_CREDENTIALS_KEY: %w", err)
		}
		return k, nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, "credentials.key"))
	if err != nil {
		return nil, fmt.Errorf("no EHR_CREDENTIALS_KEY, and the demo's key: %w", err)
	}
	k, err := keyring.ParseKey(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "credentials.key"), err)
	}
	return k, nil
}
