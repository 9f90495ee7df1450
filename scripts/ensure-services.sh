#!/usr/bin/env bash
# Makes sure the services the tests need are up: PostgreSQL on
# 127.0.0.1:5432 (trust auth), Redis on 127.0.0.1:6379 and NATS with
# JetStream on 127.0.0.1:4222 (store in /var/lib/nats-server, log in
# /var/log/nats-server.log). Starts them when they are down and installs
# Debian's packages when they are missing.
set -euo pipefail

log() { echo "ensure-services: $*" >&2; }

apt_install() {
	if [ "$(id -u)" != 0 ]; then
		log "cannot install $* without root"; exit 1
	fi
	log "installing $*"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

# PostgreSQL
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
	command -v pg_ctlcluster >/dev/null 2>&1 || apt_install postgresql
	version=$(ls /etc/postgresql | sort -V | tail -n 1)
	log "starting PostgreSQL $version"
	pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
	for _ in $(seq 1 30); do
		pg_isready -q -h 127.0.0.1 -p 5432 && break
		sleep 1
	done
	pg_isready -q -h 127.0.0.1 -p 5432 || { log "PostgreSQL did not start"; exit 1; }
fi
if ! psql "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" -Atqc 'select 1' >/dev/null 2>&1; then
	log "PostgreSQL at 127.0.0.1:5432 refuses user postgres without a password (tests expect trust auth)"
	exit 1
fi

# Redis
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
	command -v redis-server >/dev/null 2>&1 || apt_install redis-server
	log "starting Redis"
	mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
	redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
		--dir /var/lib/redis --logfile /var/log/redis/ci.log >&2
	for _ in $(seq 1 20); do
		redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break
		sleep 0.5
	done
	redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || { log "Redis did not start"; exit 1; }
fi

# NATS with JetStream
nats_up() { (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; }
if ! nats_up; then
	[ -x /usr/sbin/nats-server ] || apt_install nats-server
	log "starting NATS with JetStream"
	mkdir -p /var/lib/nats-server
	start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
		-a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log >&2
	for _ in $(seq 1 30); do
		nats_up && break
		sleep 0.5
	done
	nats_up || { log "NATS did not start on 127.0.0.1:4222 (see /var/log/nats-server.log)"; exit 1; }
fi
