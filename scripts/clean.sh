#!/usr/bin/env bash
# `make clean`: stops what `make run` left running (scripts/stop.sh), then
# removes the generated data of this clone — data/ (blobs, demo data and
# keys), bin/ and the private PostgreSQL cluster — and prints each path.
# Asks nothing. Keeps what is shared with other clones and `make test`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
clone=$(pwd -P)

bash scripts/stop.sh
removed=0
while read -r path; do
	[ -n "$path" ] || continue
	rm -rf -- "${path:?}"
	echo "clean: removed $path"
	removed=1
done < <(for d in data bin; do [ -e "$d" ] && echo "$clone/$d"; done; bash scripts/dev-postgres.sh dirs)
[ "$removed" = 1 ] || echo "clean: nothing to remove"
cat <<TXT
clean: kept (shared with other clones and make test; remove them by hand if you want):
  ${XDG_CONFIG_HOME:-$HOME/.config}/carebridge/dev-signing-key.pem   dev-mode signing key (DEV_KEY_FILE)
  $HOME/.cache/carebridge/   versitygw and FHIR server installs
TXT
