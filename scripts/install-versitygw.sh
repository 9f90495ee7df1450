#!/usr/bin/env bash
# Installs versitygw, the S3-compatible server the integration tests run
# against, and prints the path of its binary: nothing else goes to stdout, so
#
#   VERSITYGW_BIN=$(scripts/install-versitygw.sh)
#
# works from a shell or a Makefile. Idempotent: a binary that is already there
# and runs is reused. VERSITYGW_DIR overrides the install directory.
set -euo pipefail

version=v1.8.0
dir=${VERSITYGW_DIR:-${HOME}/.cache/carebridge/versitygw-${version}}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd) # GOBIN must be absolute
bin=$dir/versitygw

if [[ -x $bin ]] && "$bin" --version >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi

echo "install-versitygw: building versitygw ${version} into ${dir} (takes a minute or two)" >&2
# Outside any module, so the project's go.mod plays no part.
(cd "$dir" && GOBIN=$dir go install "github.com/versity/versitygw/cmd/versitygw@${version}") >&2

if ! "$bin" --version >/dev/null 2>&1; then
	echo "install-versitygw: ${bin} was installed but does not run" >&2
	exit 1
fi
echo "$bin"
