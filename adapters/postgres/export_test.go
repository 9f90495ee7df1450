package postgres_test

import "github.com/carebridge/carebridge/adapters/postgres"

var postgresMigrate = postgres.Migrate
