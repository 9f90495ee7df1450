# Sourced by scripts/run.sh (not run on its own): the demo EHR systems of
# `make run` — a FHIR R4 server and a WebSocket bot on loopback, seeded with
# synthetic people and practitioners (cmd/carebridge-demo) — unless
# DEMO_EHR=off or EHR_CONFIG is set.
#
#   demo_check      decides (sets demo_on, or demo_note saying why not)
#   demo_install    starts installing the FHIR server from npm in the background
#   demo_start A B  starts the demo (after bin/carebridge-demo is built), the
#                   FHIR server serving practice A and the bot practice B
#                   (business UUIDs), and exports EHR_CONFIG,
#                   EHR_CREDENTIALS_KEY and the DEMO_* ids; sets demo_pid

demo_on="" demo_note="" demo_pid="" demo_install_pid=""

demo_check() {
	case "${DEMO_EHR:-}" in
	"" | on) ;;
	off)
		demo_note="DEMO_EHR=off: no demo EHR systems (search and appointments answer 503 no_ehr_configured)"
		return 0
		;;
	*)
		echo "DEMO_EHR: must be off or unset, got '${DEMO_EHR}'" >&2
		exit 1
		;;
	esac
	if [ -n "${EHR_CONFIG:-}" ]; then
		demo_note="EHR_CONFIG is set: no demo EHR systems"
		return 0
	fi
	demo_on=1
	mkdir -p data/demo
	chmod 700 data/demo
}

demo_install() {
	[ -n "$demo_on" ] || return 0
	rm -f data/demo/medplum.dir
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "demo: no FHIR demo: Node.js (node and npm) is not installed; the WebSocket bot answers appointments too" >&2
		return 0
	fi
	bash scripts/install-medplum.sh >data/demo/medplum.dir 2>data/demo/install-medplum.log &
	demo_install_pid=$!
}

demo_start() {
	[ -n "$demo_on" ] || return 0
	if [ -z "${EHR_CREDENTIALS_KEY:-}" ]; then
		# A local key for the demo's enc:v1: secrets, kept beside the demo data.
		[ -s data/demo/credentials.key ] || (umask 077 && head -c 32 /dev/urandom | base64 >data/demo/credentials.key)
		EHR_CREDENTIALS_KEY=$(cat data/demo/credentials.key)
		export EHR_CREDENTIALS_KEY
	fi
	local medplum=""
	if [ -n "$demo_install_pid" ]; then
		if wait "$demo_install_pid"; then
			medplum=$(cat data/demo/medplum.dir)
		else
			echo "demo: no FHIR demo: installing the FHIR server from npm failed (see data/demo/install-medplum.log)" >&2
		fi
	fi
	rm -f data/demo/demo.env
	bin/carebridge-demo --dir data/demo ${medplum:+--medplum "$medplum"} \
		--fhir-business "$1" --bot-business "$2" 2>data/demo/demo.log &
	demo_pid=$!
	for _ in $(seq 1 900); do
		[ -s data/demo/demo.env ] && break
		if ! kill -0 "$demo_pid" 2>/dev/null; then
			echo "demo: the demo EHR systems did not start: $(tail -n 3 data/demo/demo.log)" >&2
			exit 1
		fi
		sleep 0.1
	done
	[ -s data/demo/demo.env ] || {
		echo "demo: the demo EHR systems were not ready within 90 s (data/demo/demo.log)" >&2
		exit 1
	}
	set -a
	. data/demo/demo.env
	set +a
	demo_note="demo EHR systems: $(tail -n 1 data/demo/demo.log | sed 's/^carebridge-demo: //')"
}

stop_demo() {
	if [ -n "$demo_pid" ]; then
		kill -TERM "$demo_pid" 2>/dev/null || true
		wait "$demo_pid" 2>/dev/null || true
	fi
	demo_pid=""
}
