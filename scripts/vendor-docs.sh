#!/usr/bin/env bash
# Re-vendors the renderer of the API reference page (GET /docs): Swagger UI,
# from the npm package swagger-ui-dist at the pinned version, into
# adapters/httpapi/docs/assets/swagger-ui/, which is committed and embedded
# into the binary (adapters/httpapi/docs.go). Run it to reproduce the
# committed files, or after changing the pin to upgrade:
#
#   bash scripts/vendor-docs.sh          # re-vendor the pinned version
#   git diff --stat adapters/httpapi/docs # nothing, when the tree matches
#
# Only the files the page loads are kept (the bundle and its stylesheet),
# with the package's LICENSE, NOTICE, the licences of what the bundle
# includes, and package.json (its version). The tarball is fetched with
# `npm pack` and checked against the pinned sha512: npm runs no install
# script, so the package's install-time telemetry dependency (@scarf/scarf)
# never runs. The page itself is ours: adapters/httpapi/docs/index.html and
# assets/init.js (the Swagger UI configuration), not touched here.
#
# Needs node and npm. Writes nothing outside the target folder and a
# temporary directory.
set -euo pipefail

version=5.35.0
integrity=sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ==
files=(
	swagger-ui-bundle.js
	swagger-ui.css
	LICENSE
	NOTICE
	swagger-ui-bundle.js.LICENSE.txt
	package.json
)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
dest=$root/adapters/httpapi/docs/assets/swagger-ui

log() { echo "vendor-docs: $*" >&2; }

command -v npm >/dev/null || { log "npm not found: install Node.js 20 or newer (apt-get install nodejs npm)"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

log "fetching swagger-ui-dist@${version}"
tarball=$(cd "$tmp" && npm pack --silent "swagger-ui-dist@${version}" 2>/dev/null | tail -n1)
got="sha512-$(openssl dgst -sha512 -binary "$tmp/$tarball" | base64 -w0)"
if [[ $got != "$integrity" ]]; then
	log "swagger-ui-dist-${version}.tgz has ${got}, want ${integrity}"
	exit 1
fi
tar -xzf "$tmp/$tarball" -C "$tmp"

rm -rf "$dest"
mkdir -p "$dest"
for f in "${files[@]}"; do
	cp "$tmp/package/$f" "$dest/$f"
done
chmod 0644 "$dest"/*
log "wrote ${#files[@]} files of swagger-ui-dist@${version} to ${dest}"
