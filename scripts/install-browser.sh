#!/usr/bin/env bash
# Installs what the browser tests need and prints where it is, as shell
# assignments and nothing else on stdout, so
#
#   eval "$(bash scripts/install-browser.sh)"   # sets CHROMIUM_BIN and PLAYWRIGHT_DIR
#
# works from a shell or a Makefile (make test exports both):
#
#   CHROMIUM_BIN    Debian's chromium (/usr/bin/chromium), installed with
#                   apt-get when missing (needs root; `apt-get update` first)
#   PLAYWRIGHT_DIR  a directory with node_modules/playwright-core at the pinned
#                   version (~/.cache/carebridge/playwright-<version>)
#
# Playwright drives the system chromium (launch option executablePath):
# `npx playwright install`, which downloads a browser build of its own, is
# not used, and playwright-core downloads nothing when installed.
#
# Idempotent: a complete install of the same version is reused (a stamp file
# is written last). PLAYWRIGHT_DIR overrides the install directory. Needs node
# (20 or newer) and npm; nothing is installed globally by npm.
set -euo pipefail

version=1.65.1
dir=${PLAYWRIGHT_DIR:-${HOME}/.cache/carebridge/playwright-${version}}
chromium=/usr/bin/chromium

log() { echo "install-browser: $*" >&2; }

if ! [[ -x $chromium ]]; then
	if [[ $(id -u) != 0 ]]; then
		log "${chromium} not found: install Debian's chromium (sudo apt-get install chromium)"
		exit 1
	fi
	log "installing Debian's chromium with apt-get (a minute or two)"
	mkdir -p "${HOME}/.cache/carebridge"
	# One apt-get at a time (two `make test` runs side by side).
	exec 8>"${HOME}/.cache/carebridge/.apt.lock"
	flock 8
	if ! [[ -x $chromium ]]; then
		apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
	fi
	exec 8>&-
fi
if ! "$chromium" --version >/dev/null 2>&1; then
	log "${chromium} was installed but does not run"
	exit 1
fi

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
stamp=$dir/.carebridge-complete
want="playwright-core@${version}"

exec 9>"$dir/.lock"
flock 9

installed() {
	[[ -f $stamp && "$(cat "$stamp")" == "$want" ]] || return 1
	[[ "$(node -p "require('$dir/node_modules/playwright-core/package.json').version" 2>/dev/null)" == "$version" ]]
}

if ! installed; then
	log "installing ${want} into ${dir} (about 10 MB)"
	rm -f "$stamp"
	cat >"$dir/package.json" <<EOF
{
  "name": "carebridge-playwright",
  "private": true,
  "description": "Playwright for Carebridge's browser tests, driving Debian's chromium (written by scripts/install-browser.sh)",
  "dependencies": {
    "playwright-core": "${version}"
  }
}
EOF
	(cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --save-exact --ignore-scripts --loglevel=error "$want") >&2
	if ! (cd "$dir" && node -e "require('playwright-core').chromium") >&2; then
		log "${want} was installed into ${dir} but does not load"
		exit 1
	fi
	echo "$want" >"$stamp"
fi

printf 'CHROMIUM_BIN=%q\nPLAYWRIGHT_DIR=%q\n' "$chromium" "$dir"
