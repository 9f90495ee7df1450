#!/usr/bin/env bash
# `make stop`: stops what `make run` may have left running in the
# background — each process whose pid file is in data/demo/*.pid (the demo
# EHR systems), then the clone's private PostgreSQL (as the postgres user
# when run by root). Safe to run when nothing is running.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
log() { echo "stop: $*" >&2; }

# stop_pidfile FILE: TERM the process (its process group when it leads one),
# KILL it after 10 s; a pid now held by a process started after the file was
# written belongs to someone else and is left alone.
stop_pidfile() {
	local f=$1 name pid age started
	name=$(basename "$f" .pid)
	pid=$(tr -dc '0-9' < "$f")
	if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
		log "$name: not running"
		rm -f "$f"
		return
	fi
	age=$(ps -o etimes= -p "$pid" | tr -d ' ')
	started=$(( $(date +%s) - ${age:-0} ))
	if [ "$started" -gt $(( $(stat -c %Y "$f") + 5 )) ]; then
		log "$name: pid $pid now belongs to another process; left alone"
		rm -f "$f"
		return
	fi
	local target=$pid
	[ "$(ps -o pgid= -p "$pid" | tr -d ' ')" = "$pid" ] && target=-$pid
	kill -TERM -- "$target" 2>/dev/null || true
	for _ in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL -- "$target" 2>/dev/null || true
		log "$name: killed (pid $pid did not stop on TERM in 10 s)"
	else
		log "$name: stopped (pid $pid)"
	fi
	rm -f "$f"
}

shopt -s nullglob
for f in data/demo/*.pid; do
	stop_pidfile "$f"
done
bash scripts/dev-postgres.sh stop
