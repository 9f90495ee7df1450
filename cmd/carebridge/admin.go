package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core/business"
)

const adminUsage = `usage:
  carebridge admin create-business --name N --email E --owner SUB
  carebridge admin create-provider --first F --last L --email E [--telehealth URL] --location ID`

// admin runs the data-seeding commands the HTTP API has no endpoint for.
// Each prints the new record's id as JSON.
func admin(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(adminUsage)
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("admin "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var run func(*business.Service) (any, error)
	switch cmd {
	case "create-business":
		name := fs.String("name", "", "business name")
		email := fs.String("email", "", "business e-mail")
		owner := fs.String("owner", "", "subject (token sub) of the owner")
		run = func(s *business.Service) (any, error) {
			b, err := s.CreateBusiness(ctx, *name, *email, *owner)
			return map[string]string{"id": b.ID}, err
		}
	case "create-provider":
		first := fs.String("first", "", "first name")
		last := fs.String("last", "", "last name")
		email := fs.String("email", "", "e-mail")
		telehealth := fs.String("telehealth", "", "telehealth link (http(s) URL)")
		location := fs.Int64("location", 0, "id of the location the provider is affiliated with")
		run = func(s *business.Service) (any, error) {
			p, err := s.CreateProvider(ctx, business.Provider{FirstName: *first, LastName: *last, Email: *email, TelehealthLink: *telehealth}, *location)
			return map[string]int64{"id": p.ID}, err
		}
	default:
		return fmt.Errorf("unknown admin command %q\n%s", cmd, adminUsage)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v\n%s", err, adminUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), adminUsage)
	}

	url := getenv.or("DATABASE_URL", "")
	if url == "" {
		return errors.New("DATABASE_URL: is required")
	}
	if err := postgres.Migrate(url); err != nil {
		return err
	}
	db, err := postgres.New(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	out, err := run(app.NewBusinessWithoutLogos(db))
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(out)
}
