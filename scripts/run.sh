#!/usr/bin/env bash
# `make run`: the service on its embedded defaults. Uses DATABASE_URL when
# set, otherwise a private PostgreSQL cluster in .pgdata; the filesystem blob
# store in ./data/blobs; dev-mode auth on 127.0.0.1:8080. Prints a dev token
# and calls that work, then serves until interrupted.
set -euo pipefail

export HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8080}
export AUTH_DEV_MODE=${AUTH_DEV_MODE:-true}
export CLOUD_STORAGE_CONNECTION_STRING=${CLOUD_STORAGE_CONNECTION_STRING:-file://./data/blobs}
if [ -z "${DATABASE_URL:-}" ]; then
	DATABASE_URL=$(bash scripts/dev-postgres.sh)
fi
export DATABASE_URL
if [ -z "${CLOUD_STORAGE_ENCRYPTION_KEY:-}" ]; then
	# A local demo key, kept beside the dev data so encrypted files stay readable across runs.
	mkdir -p data
	[ -s data/dev-encryption.key ] || head -c 32 /dev/urandom | base64 > data/dev-encryption.key
	chmod 600 data/dev-encryption.key
	CLOUD_STORAGE_ENCRYPTION_KEY=$(cat data/dev-encryption.key)
	export CLOUD_STORAGE_ENCRYPTION_KEY
fi

go build -o bin/carebridge ./cmd/carebridge
bin/carebridge migrate
sub=${DEV_SUBJECT:-dev-user}
token=$(bin/carebridge dev-token --sub "$sub" --ttl 24h)

bin/carebridge serve &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM
base="http://$HTTP_ADDR"
for _ in $(seq 1 50); do
	curl -fsS "$base/healthz" >/dev/null 2>&1 && break
	sleep 0.2
done
printf 'hello from carebridge\n' > data/hello.txt
cat <<TXT

Carebridge is running on $base (dev-mode auth, blobs in ./data/blobs).
Database: $DATABASE_URL

A token for subject "$sub" (24 h):
  export TOKEN=$token

Upload a file (metadata parts first, then the file):
  curl -sS -H "Authorization: Bearer \$TOKEN" \\
    -F originalFilename=hello.txt -F contentType=text/plain -F fileSize=$(wc -c < data/hello.txt) \\
    -F isEncrypted=true -F file=@data/hello.txt $base/cloud-blob/upload

Then, with the id it answers:
  curl -sS -H "Authorization: Bearer \$TOKEN" $base/cloud-blob/metadata/1
  curl -sS -H "Authorization: Bearer \$TOKEN" $base/cloud-blob/download/1
  curl -sS -X DELETE -H "Authorization: Bearer \$TOKEN" $base/cloud-blob/1

Health: $base/healthz  Readiness: $base/readyz  Metrics: $base/metrics
Stop with Ctrl-C.
TXT
wait $pid
