// Command carebridge is the Carebridge service and its admin tools.
//
//	carebridge [serve]            run the HTTP service (migrates first)
//	carebridge migrate            apply database migrations
//	carebridge dev-token --sub S [--scope "S1 S2"]  print a token for AUTH_DEV_MODE
//	carebridge admin create-business | create-provider  seed data
//	carebridge secrets encrypt    read a secret on stdin, print its enc:v1: form
//	carebridge audit list | verify  print audit events, check the audit hash chain
//	carebridge admin add-webhook | list-webhooks | remove-webhook | webhook-deliveries
//	carebridge dev-receiver --secret whsec_…  a local webhook receiver that checks signatures
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/carebridge/carebridge/adapters/auth"
	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/app"
)

// gcPercent is the GC target unless GOGC says otherwise: the service's
// live heap is small (tens of MiB), and under load a higher target spends a
// few MiB more to save about a tenth of the CPU.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "carebridge:", err)
		os.Exit(1)
	}
}

const usage = `usage: carebridge [serve | migrate | dev-token --sub SUB [--scope "S1 S2"] [--ttl 1h] | secrets encrypt | admin ... | audit list|verify | dev-receiver]
` + adminUsage + "\n" + auditUsage + "\n" + receiverUsage

func run(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, getenv)
	case "migrate":
		url := getenv.or("DATABASE_URL", "")
		if url == "" {
			return errors.New("DATABASE_URL: is required")
		}
		return postgres.Migrate(url)
	case "dev-token":
		return devToken(args, getenv, stdout)
	case "admin":
		return admin(ctx, args, getenv, stdout)
	case "audit":
		return auditCmd(ctx, args, getenv, stdout)
	case "secrets":
		return secrets(args, getenv, stdin, stdout)
	case "dev-receiver":
		return devReceiver(ctx, args, stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

func serve(ctx context.Context, getenv env) error {
	cfg, level, err := loadConfig(getenv)
	if err != nil {
		return errors.New(oneLine(err))
	}
	out := newLogWriter(os.Stderr, 200*time.Millisecond)
	defer out.Close()
	log := slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level}))
	hangup := make(chan os.Signal, 1)
	signal.Notify(hangup, syscall.SIGHUP) // before New: a SIGHUP during start-up must not kill
	defer signal.Stop(hangup)
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hangup:
				reloadEHR(getenv, a, log)
			}
		}
	}()
	return a.Run(ctx)
}

// ehrReloader puts an EHR systems file in force (*app.App).
type ehrReloader interface {
	ReloadEHR(cfg *ehrconfig.Config) error
}

// reloadEHR re-reads EHR_CONFIG as start-up does (SIGHUP) and hands it to
// a: one INFO line names the systems now in force; a file that does not
// validate is refused with an ERROR line and the systems in force stay.
func reloadEHR(getenv env, a ehrReloader, log *slog.Logger) {
	if getenv.or("EHR_CONFIG", "") == "" {
		log.Warn("SIGHUP: EHR_CONFIG is not set, no EHR systems file to reload")
		return
	}
	var errs []error
	cfg := loadEHRConfig(getenv, func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	})
	err := errors.Join(errs...)
	if err == nil {
		err = a.ReloadEHR(cfg)
	}
	if err != nil {
		log.Error("EHR systems file refused; the systems in force stay", "error", oneLine(err))
		return
	}
	names := make([]string, len(cfg.Systems))
	for i, s := range cfg.Systems {
		names[i] = s.Name
	}
	log.Info("EHR systems file reloaded", "systems", names, "integration", cfg.Integration.EHR)
}

func devToken(args []string, getenv env, stdout io.Writer) error {
	fs := flag.NewFlagSet("dev-token", flag.ContinueOnError)
	sub := fs.String("sub", "", "subject (caller id) of the token")
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token")
	scope := fs.String("scope", auth.DevScopes, "space-separated SMART scopes of the token (\"\": none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sub == "" || *ttl <= 0 {
		return errors.New("dev-token: --sub is required and --ttl must be positive")
	}
	path, err := devKeyFile(getenv)
	if err != nil {
		return fmt.Errorf("DEV_KEY_FILE: %w", err)
	}
	key, err := auth.LoadOrCreateDevKey(path)
	if err != nil {
		return err
	}
	token, err := auth.MintDevToken(key, getenv.or("OIDC_AUDIENCE", defaultAudience), *sub, *scope, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, token)
	return nil
}

// secrets encrypt reads one secret on standard input (a trailing newline is
// dropped) and prints its enc:v1: form under EHR_CREDENTIALS_KEY.
func secrets(args []string, getenv env, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 1 || args[0] != "encrypt" {
		return errors.New("usage: carebridge secrets encrypt < secret")
	}
	key, err := keyring.ParseKey(getenv.or("EHR_CREDENTIALS_KEY", ""))
	if err != nil {
		return fmt.Errorf("EHR_CREDENTIALS_KEY: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
	if err != nil {
		return fmt.Errorf("read secret: %w", err)
	}
	secret := strings.TrimRight(string(raw), "\r\n")
	if secret == "" {
		return errors.New("secrets encrypt: no secret on standard input")
	}
	enc, err := ehrconfig.EncryptSecret(key, secret)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, enc)
	return err
}
