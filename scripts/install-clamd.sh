#!/usr/bin/env bash
# Installs clamd, the ClamAV daemon the malware-scanning tests run against,
# and prints the path of a launcher for it: nothing else goes to stdout, so
#
#   CLAMD_BIN=$(scripts/install-clamd.sh)
#
# works from a shell or a Makefile. Debian's packages are fetched with
# `apt-get download` at pinned versions and unpacked into a cache directory
# with `dpkg-deb -x`: nothing is installed system-wide, no clamav user, no
# service, no freshclam and no signatures from the network (the tests write
# their own database; see test/clamdtest). The launcher runs clamd with the
# unpacked libraries; clamd needs a config file (`clamd -c FILE`), even for
# --version, which reads the default /etc/clamav/clamd.conf otherwise.
#
# Idempotent: a launcher that is already there and runs is reused.
# CLAMD_DIR overrides the install directory.
set -euo pipefail

# The pinned packages. bookworm-security serves only its newest build: when
# a security update replaces this one, `apt-cache policy clamav-daemon`
# names the new version to pin here.
clamav_version=1.4.6+dfsg-0+deb12u1
mspack_version=0.11-1
pinned=(
	"clamav-daemon=${clamav_version}"
	"libclamav12=${clamav_version}"
	"libmspack0=${mspack_version}"
)
# Libraries clamd and libclamav link against that the base image has; any
# that a machine lacks is fetched too (at the version apt serves), unpacked
# beside the pinned ones.
base_libs=(libbz2-1.0 libcurl4 libjson-c5 libncurses6 libpcre2-8-0 libssl3 libsystemd0 libtinfo6 libxml2 zlib1g)

dir=${CLAMD_DIR:-${HOME}/.cache/carebridge/clamd-${clamav_version}}
launcher=$dir/clamd

# runs: whether the launcher at $1 starts clamd.
runs() { [[ -x $1 ]] && "$1" -c /dev/null --version >/dev/null 2>&1; }

if runs "$launcher"; then
	echo "$launcher"
	exit 0
fi

log() { echo "install-clamd: $*" >&2; }

parent=$(dirname "$dir")
mkdir -p "$parent"
parent=$(cd "$parent" && pwd) # the launcher holds absolute paths
dir=$parent/$(basename "$dir")
launcher=$dir/clamd

# Everything is assembled in a temporary directory beside the final one and
# renamed into place, so an interrupted run leaves nothing half-made.
# The .debs go to a directory of their own under TMPDIR, handed to apt's
# _apt user when we are root, so apt fetches them sandboxed, as it prefers.
work=$(mktemp -d "$parent/.clamd-install.XXXXXX")
debs=$(mktemp -d)
trap 'rm -rf "$work" "$debs"' EXIT
if ((EUID == 0)) && id _apt >/dev/null 2>&1; then chown _apt "$debs"; fi
chmod 755 "$work"
mkdir "$work/root"

# served PKG=VERSION: whether apt knows that version of the package.
served() {
	local pkg=${1%%=*} version=${1#*=}
	apt-cache show "$pkg=$version" >/dev/null 2>&1
}

wanted=("${pinned[@]}")
for lib in "${base_libs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$lib" 2>/dev/null | grep -q 'ok installed'; then
		log "$lib is not installed here; fetching it too"
		wanted+=("$lib")
	fi
done

missing=0
for p in "${pinned[@]}"; do served "$p" || missing=1; done
if ((missing)); then
	log "refreshing apt's package lists (apt-get update)"
	apt-get update -qq >&2
fi
for p in "${pinned[@]}"; do
	if ! served "$p"; then
		log "apt does not serve ${p}; pin what it serves instead:"
		apt-cache policy "${p%%=*}" >&2 || true
		exit 1
	fi
done

log "fetching ${wanted[*]}"
(cd "$debs" && apt-get download -q "${wanted[@]}") >&2
for deb in "$debs"/*.deb; do
	dpkg-deb -x "$deb" "$work/root"
done

lib=$(dirname "$(find "$work/root" -name 'libclamav.so.*' -print -quit)")
lib=$dir/${lib#"$work/"}
cat >"$work/clamd" <<EOF
#!/bin/sh
# clamd ${clamav_version}, unpacked by scripts/install-clamd.sh.
LD_LIBRARY_PATH='${lib}'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
exec '${dir}/root/usr/sbin/clamd' "\$@"
EOF
chmod 755 "$work/clamd"

rm -rf "$dir"
mv "$work" "$dir"

if unresolved=$(LD_LIBRARY_PATH=$lib ldd "$dir/root/usr/sbin/clamd" | grep 'not found'); then
	log "clamd misses shared libraries:"
	echo "$unresolved" >&2
	exit 1
fi
if ! runs "$launcher"; then
	log "${launcher} was installed but does not run"
	exit 1
fi
log "installed $("$launcher" -c /dev/null --version)"
echo "$launcher"
