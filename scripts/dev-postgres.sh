#!/usr/bin/env bash
# Starts a private PostgreSQL cluster for `make run` in .pgdata (git-ignored)
# on 127.0.0.1:$DEV_PG_PORT and prints its DATABASE_URL. Runs the server as
# the postgres user when invoked by root. Installs Debian's postgresql when
# the server binaries are missing.
set -euo pipefail

port=${DEV_PG_PORT:-54329}
dir=$(pwd)/.pgdata
log() { echo "dev-postgres: $*" >&2; }

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bindir" ]; then
	log "installing postgresql"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
	bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi

as_owner() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

if [ ! -f "$dir/PG_VERSION" ]; then
	log "creating cluster in $dir"
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
	as_owner "$bindir/initdb" -D "$dir" -U postgres -A trust -E UTF8 >&2
fi
if ! as_owner "$bindir/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
	log "starting PostgreSQL on 127.0.0.1:$port"
	as_owner "$bindir/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
		-o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >&2
fi
if ! as_owner "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -Atqc \
	"select 1 from pg_database where datname = 'carebridge'" postgres | grep -q 1; then
	as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres carebridge >&2
fi
echo "postgres://postgres@127.0.0.1:$port/carebridge?sslmode=disable"
