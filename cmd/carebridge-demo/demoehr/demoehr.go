// Package demoehr runs the demo EHR systems of `make run` on loopback: a
// FHIR R4 server (the in-memory Medplum server of
// adapters/ehr/fhir/fhirserver, which the tests use too) and a WebSocket
// bot speaking the contract's protocol (adapters/ehr/wsbot/wsbotserver),
// both seeded from one synthetic data set (people.go), with the EHR systems
// file that points Carebridge at them. The command cmd/carebridge-demo
// runs it; the end-to-end tests use it too. It links no test code.
package demoehr

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/adapters/ehr/fhir/fhirserver"
	"github.com/carebridge/carebridge/adapters/ehr/wsbot/wsbotserver"
	"github.com/carebridge/carebridge/core/ehr"
)

// The names of the demo systems in the EHR systems file.
const (
	FHIRName = "demo-fhir"
	BotName  = "demo-bot"
)

// SyncInterval is how often Carebridge polls the demo's integration EHRs
// for the changes made in them directly (see FrontDesk): short, so a
// change shows as an event within seconds.
const SyncInterval = 5 * time.Second

// syncEntry is the sync setting of an integration system's entry.
var syncEntry = fmt.Sprintf("    sync: { interval: %s }\n", SyncInterval)

// Practices are the demo's two practices (business UUIDs), each with its
// own integration EHR: FHIR the FHIR server, Bot the bot. The bot also
// serves FHIR's searches (a person in both systems is merged there); without
// the FHIR demo the bot serves both. The zero value binds no system to a
// business (a single-practice file: every business is served by both).
type Practices struct {
	FHIR, Bot string
}

// Demo is the running demo systems.
type Demo struct {
	// File is the EHR systems file (secrets in enc:v1: form).
	File string
	// Integration names the system behind the appointment endpoints: the
	// FHIR one, or the bot without Node.js.
	Integration string
	// AgentID is the first practitioner's id in the integration system.
	AgentID string
	// BothFamily and BothGiven name a person held by both systems (with
	// the same MRN), whom a search merges.
	BothFamily, BothGiven string
	// Probable is the probable pair of the matching cases (CaseProbable,
	// cases.go): its two records as a person link names them, the FHIR
	// server's first (without the FHIR demo both are the bot's).
	Probable [2]ehr.SourceRef

	bot  *wsbotserver.Server
	fhir *fhirserver.Server // nil without the FHIR demo
}

// Config is what Start needs.
type Config struct {
	// Dir is where the EHR systems file (and the FHIR server's files) go.
	Dir string
	// Medplum is the install directory of scripts/install-medplum.sh; ""
	// starts the bot alone, which then answers the appointment endpoints
	// too.
	Medplum string
	// Key encrypts the file's secrets (EHR_CREDENTIALS_KEY).
	Key []byte
	// Practices binds the systems to the practices (zero: to none).
	Practices Practices
}

// Start starts the systems, seeds them and writes the EHR systems file
// into cfg.Dir (ctx bounds the start only); Close stops them.
func Start(ctx context.Context, cfg Config) (*Demo, error) {
	now := time.Now()
	d := &Demo{Integration: BotName, BothFamily: person(botFrom).Name.Family, BothGiven: person(botFrom).Name.Given[0]}
	botSystem, err := d.startBot(ctx, cfg.Key, now, cfg.Medplum == "")
	if err != nil {
		d.Close()
		return nil, err
	}
	systems := []string{botSystem}
	p := cfg.Practices
	bound := p != Practices{}
	byBusiness := ""
	if cfg.Medplum != "" {
		system, err := d.startFHIR(ctx, cfg.Medplum, cfg.Dir, cfg.Key, now)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("FHIR demo: %w", err)
		}
		system += syncEntry
		if bound {
			// A is served by both systems (a person in both is merged in
			// its searches), B by the bot alone; both are integration EHRs.
			system += businesses(p.FHIR)
			systems[0] += syncEntry + businesses(p.FHIR, p.Bot)
			byBusiness = fmt.Sprintf("  by_business:\n    %s: %s\n    %s: %s\n", p.FHIR, FHIRName, p.Bot, BotName)
		}
		systems = append([]string{system}, systems...)
		d.Integration = FHIRName
	} else {
		systems[0] += syncEntry // the integration EHR
		if bound {
			systems[0] += businesses(p.FHIR, p.Bot)
		}
	}
	if err := d.writeFile(cfg, systems, byBusiness); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// startBot starts the bot (Basic auth, people [botFrom, demoPeople), the
// bot's records of the matching cases (alone: the FHIR server's too) and
// every practitioner) and returns its entry of the EHR systems file.
func (d *Demo) startBot(ctx context.Context, key []byte, now time.Time, alone bool) (string, error) {
	password := randomHex(16)
	bot, err := wsbotserver.Start(ctx, wsbotserver.WithAuthorization("Basic "+base64.StdEncoding.EncodeToString([]byte("demo:"+password))))
	if err != nil {
		return "", err
	}
	d.bot = bot
	for i := botFrom; i < demoPeople; i++ {
		d.bot.AddPatient(person(i))
		_, records := recordsOf(i, now)
		for _, r := range records {
			d.bot.AddRecord(r)
		}
	}
	for _, c := range Cases() {
		if alone {
			d.bot.AddPatient(c.FHIR)
		}
		d.bot.AddPatient(c.Bot)
		if c.Name == CaseProbable {
			d.Probable = [2]ehr.SourceRef{{Source: BotName, PatientID: c.FHIR.ID}, {Source: BotName, PatientID: c.Bot.ID}}
		}
	}
	for i, a := range practitioners {
		a.ID = fmt.Sprintf("bot-agent-%d", i+1)
		if id := d.bot.AddAgent(a, freeTime(a.Timezone, now)); i == 0 {
			d.AgentID = id
		}
	}
	enc, err := ehrconfig.EncryptSecret(key, password)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`  - name: %s
    adapter: wsbot
    base_url: %s
    search_types: [patient_record]
    authentication:
      type: basic
      username: demo
      password: %s
    timeout: 5000
`, BotName, d.bot.URL(), enc), nil
}

// writeFile checks the EHR systems file and writes it to cfg.Dir.
func (d *Demo) writeFile(cfg Config, systems []string, byBusiness string) error {
	yaml := "# Written by carebridge-demo for `make run`: the demo EHR systems on loopback.\nehr_systems:\n" +
		strings.Join(systems, "") + "integration:\n  ehr: " + d.Integration + "\n" + byBusiness
	if _, err := ehrkinds.All().Parse([]byte(yaml), cfg.Key, os.Getenv); err != nil {
		return fmt.Errorf("the demo's EHR systems file is not valid: %w", err)
	}
	d.File = filepath.Join(cfg.Dir, "ehr.yaml")
	return os.WriteFile(d.File, []byte(yaml), 0o600)
}

// Close stops the systems.
func (d *Demo) Close() {
	if d.fhir != nil {
		_ = d.fhir.Close() // an in-memory server: nothing to save
	}
	if d.bot != nil {
		d.bot.Close()
	}
}

// Summary is one line on what runs.
func (d *Demo) Summary() string {
	fhir := "off (no Node.js: the bot answers appointments)"
	if d.fhir != nil {
		fhir = "on"
	}
	return fmt.Sprintf("%d synthetic people (%d in both systems) with clinical records of the nine types, %d matching cases (%s), %d practitioners in 2 time zones; FHIR demo %s",
		demoPeople, fhirPeople-botFrom, len(Cases()), caseNames(), len(practitioners), fhir)
}

// caseNames lists the matching cases' names.
func caseNames() string {
	var names []string
	for _, c := range Cases() {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// startFHIR starts the Medplum server with an API key, seeds people [0,
// fhirPeople), its records of the matching cases and the practitioners,
// and returns its entry of the EHR systems file.
func (d *Demo) startFHIR(ctx context.Context, medplum, dir string, key []byte, now time.Time) (string, error) {
	work := filepath.Join(dir, "fhir")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return "", err
	}
	apiKey := randomHex(16)
	srv, err := fhirserver.Start(ctx, medplum, work, fhirserver.WithAPIKey(apiKey))
	if err != nil {
		return "", err
	}
	d.fhir = srv
	if err := seedFHIRPeople(srv, now); err != nil {
		return "", fmt.Errorf("seed: %w", err)
	}
	for _, c := range Cases() {
		created, err := srv.Post(fhirPatient(c.FHIR))
		if err != nil {
			return "", fmt.Errorf("seed: %w", err)
		}
		if c.Name == CaseProbable {
			id, _ := created["id"].(string) // Post checks it is there
			d.Probable[0] = ehr.SourceRef{Source: FHIRName, PatientID: id}
		}
	}
	for i, a := range practitioners {
		id, err := srv.PostAgent(a, freeTime(a.Timezone, now))
		if err != nil {
			return "", fmt.Errorf("seed: %w", err)
		}
		if i == 0 {
			d.AgentID = id
		}
	}
	enc, err := ehrconfig.EncryptSecret(key, apiKey)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`  - name: %s
    adapter: fhir
    base_url: %s
    search_endpoint: /Patient
    search_types: [patient_record]
    authentication:
      type: api_key
      api_key: %s
    rate_limit: { requests_per_minute: 1200 }
    timeout: 5000
    retry_attempts: 1
`, FHIRName, srv.URL(), enc), nil
}

// seedFHIRPeople creates people [0, fhirPeople) in srv, then their
// records as of the day of now, in batches.
func seedFHIRPeople(srv *fhirserver.Server, now time.Time) error {
	var records []map[string]any
	for i := range fhirPeople {
		created, err := srv.Post(fhirPatient(person(i)))
		if err != nil {
			return err
		}
		id, _ := created["id"].(string) // Post checks it is there
		fhir, _ := recordsOf(i, now)
		for _, r := range fhir {
			records = append(records, fhirRecord(r, id))
		}
	}
	_, err := srv.Batch(records)
	return err
}

// Agent is the first practitioner (AgentID's): its name and time zone.
func (d *Demo) Agent() (name, timezone string) {
	return practitioners[0].Name, practitioners[0].Timezone
}

// businesses is a system's businesses entry of the EHR systems file.
func businesses(ids ...string) string {
	return "    businesses: [" + strings.Join(ids, ", ") + "]\n"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
