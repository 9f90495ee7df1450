#!/usr/bin/env bash
# The private PostgreSQL cluster of `make run`, one per clone.
#
#   dev-postgres.sh [start]   start it (create it first when missing) on
#                             127.0.0.1:$DEV_PG_PORT and print its DATABASE_URL
#   dev-postgres.sh stop      stop it when running (`make stop`)
#   dev-postgres.sh dirs      print the cluster directories of this clone that
#                             exist, one a line (`make clean` removes them)
#
# Where it lives: DEV_PG_DIR when set; else /var/tmp/carebridge-<hash of the
# user and the clone's path>/pgdata, outside the clone, because root runs the
# server as the postgres user, which cannot reach a clone under a private
# folder such as /root (mode 700); /var/tmp survives reboots. A cluster that
# an older `make run` created in the clone's .pgdata is kept and used as it
# is. Root runs the server as postgres; anyone else runs it as themselves.
# Installs Debian's postgresql when the server binaries are missing.
set -euo pipefail

port=${DEV_PG_PORT:-54329}
clone=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
legacy=$clone/.pgdata
base=/var/tmp/carebridge-$(printf '%s:%s' "$(id -u)" "$clone" | sha256sum | cut -c1-12)
log() { echo "dev-postgres: $*" >&2; }

if [ -n "${DEV_PG_DIR:-}" ]; then
	dir=$DEV_PG_DIR
elif [ -f "$legacy/PG_VERSION" ]; then
	dir=$legacy
else
	dir=$base/pgdata
fi

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)

as_owner() {
	if [ "$(id -u)" = 0 ]; then
		(cd / && runuser -u postgres -- "$@") # the clone may be out of its reach
	else
		"$@"
	fi
}

running() { # running DIR: a server of that cluster answers
	[ -n "$bindir" ] && [ -f "$1/PG_VERSION" ] && as_owner "$bindir/pg_ctl" -D "$1" status >/dev/null 2>&1
}

case ${1:-start} in
start) ;;
stop)
	stopped=0
	for d in "$dir" "$legacy" "$base/pgdata"; do
		if running "$d"; then
			as_owner "$bindir/pg_ctl" stop -D "$d" -m fast -w >/dev/null
			log "stopped PostgreSQL of $d"
			stopped=1
		fi
	done
	[ "$stopped" = 1 ] || log "no private PostgreSQL of this clone is running ($dir)"
	exit 0
	;;
dirs)
	# DEV_PG_DIR is the user's own path: listed only when it holds a cluster.
	if [ -n "${DEV_PG_DIR:-}" ] && [ -f "$DEV_PG_DIR/PG_VERSION" ]; then echo "$DEV_PG_DIR"; fi
	for d in "$legacy" "$base"; do
		if [ -e "$d" ]; then echo "$d"; fi
	done
	exit 0
	;;
*)
	echo "usage: dev-postgres.sh [start|stop|dirs]" >&2
	exit 2
	;;
esac

if [ -z "$bindir" ]; then
	if [ "$(id -u)" != 0 ]; then
		log "PostgreSQL's server is not installed; install Debian's postgresql (or set DATABASE_URL)"
		exit 1
	fi
	log "installing postgresql"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
	bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi

if [ ! -f "$dir/PG_VERSION" ]; then
	log "creating a PostgreSQL cluster in $dir"
	if [ "$dir" = "$base/pgdata" ]; then
		mkdir -p "$base"
		chmod 755 "$base" # the server user passes through it to its own pgdata
		printf '%s\n' "$clone" > "$base/clone"
	fi
	mkdir -p "$dir"
	chmod 700 "$dir"
	[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
	as_owner "$bindir/initdb" -D "$dir" -U postgres -A trust -E UTF8 >/dev/null
fi
if ! running "$dir"; then
	as_owner "$bindir/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
		-o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null ||
		{ log "PostgreSQL did not start; see $dir/server.log"; exit 1; }
fi
where=$dir
[ "$dir" = "$legacy" ] && where="$dir (created there by an earlier make run, kept in place)"
log "PostgreSQL on 127.0.0.1:$port, cluster in $where; make stop stops it, make clean removes it"
if ! as_owner "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -Atqc \
	"select 1 from pg_database where datname = 'carebridge'" postgres | grep -q 1; then
	as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres carebridge >&2
fi
echo "postgres://postgres@127.0.0.1:$port/carebridge?sslmode=disable"
