#!/usr/bin/env bash
# `make run`: the service on its embedded defaults. Uses DATABASE_URL when
# set, otherwise the clone's private PostgreSQL (scripts/dev-postgres.sh); the filesystem blob
# store in ./data/blobs; dev-mode auth on 127.0.0.1:8080. Prints a dev token
# and calls that work, then serves until interrupted.
set -euo pipefail

export HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8080}
export AUTH_DEV_MODE=${AUTH_DEV_MODE:-true}
# The demo's webhook receiver (carebridge dev-receiver) is on loopback: let the
# webhooks a practice makes by API reach it (never in production).
export WEBHOOK_ALLOW_PRIVATE=${WEBHOOK_ALLOW_PRIVATE:-true}
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

# The demo EHR systems (unless DEMO_EHR=off or EHR_CONFIG is set): the FHIR
# server installs from npm (first run) while Go builds.
. scripts/demo-ehr.sh
demo_check
demo_install
trap stop_demo EXIT
go build -o bin/ ./cmd/carebridge ./cmd/carebridge-demo

bin/carebridge migrate
# What the admin commands need in another terminal (the same database and
# key material, so a webhook secret is sealed with the service's key).
(
	umask 077
	{
		printf 'DATABASE_URL=%q\n' "$DATABASE_URL"
		printf 'CLOUD_STORAGE_ENCRYPTION_KEY=%q\n' "$CLOUD_STORAGE_ENCRYPTION_KEY"
		[ -z "${EHR_CREDENTIALS_KEY:-}" ] || printf 'EHR_CREDENTIALS_KEY=%q\n' "$EHR_CREDENTIALS_KEY"
	} > data/run.env
)
sub=${DEV_SUBJECT:-dev-user} sub_b=${DEV_SUBJECT_B:-dev-user-b}
# The staff tokens: dev-token's default scopes (patient search, appointments),
# updating patients (the person links call) and reading each clinical record
# type, which the records calls need.
scopes="user/Patient.rus user/Appointment.cruds"
for type in Encounter Condition Observation MedicationRequest AllergyIntolerance Immunization Procedure DocumentReference DiagnosticReport; do
	scopes+=" user/$type.rs"
done
token=$(bin/carebridge dev-token --sub "$sub" --scope "$scopes" --ttl 24h)
token_b=$(bin/carebridge dev-token --sub "$sub_b" --scope "$scopes" --ttl 24h)

# The demo's two practices (once per database): A, the demo business, owned
# by the token's subject, and B owned by $sub_b; the demo EHR systems file
# binds the FHIR server to A and the bot to B, so they exist before it.
id_of() { sed -E 's/.*"'"$1"'":"?([^",}]*)"?.*/\1/'; }
# still_there ID SUB: business ID is in the database with SUB a member (SUB
# is made an owner again if it was removed).
still_there() {
	local out
	[ -n "$1" ] && { out=$(bin/carebridge admin add-member --business "$1" --sub "$2" --role owner 2>&1) || [[ $out == *member_exists* ]]; }
}
[ -s data/demo.env ] && . data/demo.env
if ! still_there "${BUSINESS_ID:-}" "$sub"; then
	BUSINESS_ID=$(bin/carebridge admin create-business --name "Demo Family Clinic" --email demo@clinic.example --owner "$sub" | id_of id)
	LOCATION_ID=""
fi
if ! still_there "${PRACTICE_B_ID:-}" "$sub_b"; then
	PRACTICE_B_ID=$(bin/carebridge admin create-business --name "Demo Harbor Practice" --email demo@harbor.example --owner "$sub_b" | id_of id)
fi
save_demo() { printf 'BUSINESS_ID=%s\nLOCATION_ID=%s\nPRACTICE_B_ID=%s\n' "$BUSINESS_ID" "${LOCATION_ID:-}" "$PRACTICE_B_ID" > data/demo.env; }
save_demo
demo_start "$BUSINESS_ID" "$PRACTICE_B_ID"

bin/carebridge serve &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid; stop_demo' INT TERM
base="http://$HTTP_ADDR"
for _ in $(seq 1 50); do
	curl -fsS "$base/healthz" >/dev/null 2>&1 && break
	sleep 0.2
done
printf 'hello from carebridge\n' > data/hello.txt

# Seed the demo business (practice A) once: a location, providers, hours.
auth=(-H "Authorization: Bearer $token" -H "user-type: business")
if [ -z "${LOCATION_ID:-}" ]; then
	LOCATION_ID=$(curl -fsS "${auth[@]}" \
		-F 'generalInfo={"name":"Demo Clinic Downtown","timezone":"America/Chicago","phone":"+1 512 555 0100","email":"front@clinic.example","adminName":"Dr. Jane A. Smith, MD"}' \
		-F 'address={"address":"1 Congress Ave","city":"Austin","state":"TX","zipCode":"78701","country":"US"}' \
		"$base/business/location/$BUSINESS_ID/" | id_of locationId)
	bin/carebridge admin create-provider --first Ana --last Lopez --email ana@clinic.example \
		--telehealth https://meet.example/ana --location "$LOCATION_ID" >/dev/null
	bin/carebridge admin create-provider --first Ben --last Okafor --email ben@clinic.example --location "$LOCATION_ID" >/dev/null
	curl -fsS "${auth[@]}" -H 'Content-Type: application/json' -d '{"businessLocationId":'"$LOCATION_ID"',"operatingHours":[
		{"day":"Monday","start_time":"08:00","end_time":"17:00"},{"day":"Wednesday","start_time":"08:00","end_time":"17:00"},
		{"day":"Friday","start_time":"09:00","end_time":"13:00"}]}' "$base/business/operating-hours/add" >/dev/null
	save_demo
fi
cat <<TXT

Carebridge is running on $base (dev-mode auth, blobs in ./data/blobs).
Database: $DATABASE_URL

A token for subject "$sub" (24 h; a staff token: patient search and person links, appointments, and reading the nine clinical record types):
  export TOKEN=$token

Upload a file (metadata parts first, then the file):
  curl -sS -H "Authorization: Bearer \$TOKEN" \\
    -F originalFilename=hello.txt -F contentType=text/plain -F fileSize=$(wc -c < data/hello.txt) \\
    -F isEncrypted=true -F file=@data/hello.txt $base/cloud-blob/upload

Then, with the id it answers:
  curl -sS -H "Authorization: Bearer \$TOKEN" $base/cloud-blob/metadata/1
  curl -sS -H "Authorization: Bearer \$TOKEN" $base/cloud-blob/download/1
  curl -sS -X DELETE -H "Authorization: Bearer \$TOKEN" $base/cloud-blob/1

Demo business $BUSINESS_ID (location $LOCATION_ID, two providers, hours), owned by "$sub":
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "user-type: business" $base/business/$BUSINESS_ID
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "user-type: business" $base/business/locations/$BUSINESS_ID
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "user-type: business" $base/business/location/$LOCATION_ID/providers
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "user-type: business" $base/business/location/$LOCATION_ID/operating-hours
  curl -sS -X PATCH -H "Authorization: Bearer \$TOKEN" -H "user-type: business" -H 'Content-Type: application/json' \\
    -d '{"city":"Austin","state":"TX"}' $base/business/$BUSINESS_ID
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "user-type: business" -H 'Content-Type: application/json' \\
    -d '{"businessLocationId":'$LOCATION_ID',"operatingHours":[{"day":"Tuesday","start_time":"09:00","end_time":"17:00"}]}' \\
    $base/business/operating-hours/add

Events (webhooks), made by the practice's owner through the API (the demo sets WEBHOOK_ALLOW_PRIVATE=true
so a loopback receiver is allowed). Subscribe, then start a receiver in another terminal with the secret
it answered (shown once); it checks each signature and prints the event (PATCH the business above, or book below):
  curl -sS -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' \\
    -d '{"url":"http://127.0.0.1:9000/","events":["*"],"description":"demo receiver"}' $base/api/v1/webhooks
  bin/carebridge dev-receiver --addr 127.0.0.1:9000 --secret <the whsec_… it answered>
The delivery log, a replay of the last hour (same event ids), a test event (ID: the subscription's id):
  curl -sS -H "Authorization: Bearer \$TOKEN" $base/api/v1/webhooks/ID/deliveries
  curl -sS -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' \\
    -d "{\"since\":\"\$(date -u -d '-1 hour' +%FT%TZ)\",\"until\":\"\$(date -u +%FT%TZ)\"}" $base/api/v1/webhooks/ID/replay
  curl -sS -X POST -H "Authorization: Bearer \$TOKEN" $base/api/v1/webhooks/ID/test
(The operator can still subscribe any URL with bin/carebridge admin add-webhook, after: set -a; . data/run.env; set +a)

Health: $base/healthz  Readiness: $base/readyz  Metrics: $base/metrics
TXT
if [ -n "${CLAMD_ADDRESS:-}" ]; then
	echo "Uploads and logos are scanned for malware by clamd at $CLAMD_ADDRESS (/readyz shows it)."
else
	echo "Uploads are not scanned for malware: set CLAMD_ADDRESS to a running clamd to scan them (docs/api.md, Malware scanning)."
fi
if [ -n "${DEMO_AGENT_ID:-}" ]; then
	# A bookable time: 10:30 in the practitioner's zone, two days ahead
	# (not a Sunday, when the demo calendars are closed).
	day=$(TZ=$DEMO_AGENT_TZ date -d '+2 day' +%F)
	[ "$(date -d "$day" +%u)" = 7 ] && day=$(date -d "$day +1 day" +%F)
	start=$(TZ=$DEMO_AGENT_TZ date -d "$day 10:30" +%FT%T%:z)
	today=$(date +%F) year_ago=$(date -d '-1 year' +%F)
	if [ "$DEMO_INTEGRATION" = demo-fhir ]; then
		practices="Two practices, each with its own EHR: A (the demo business above, owner \"$sub\", \$TOKEN) is served by
the FHIR server (demo-fhir), B \"Demo Harbor Practice\" $PRACTICE_B_ID (owner \"$sub_b\") by the bot (demo-bot)."
		cases="acting for A, which both demo EHRs serve" typo="Marisabel (FHIR) and Marisabell (bot)"
	else
		practices="Two practices: A (the demo business above, owner \"$sub\", \$TOKEN) and B \"Demo Harbor Practice\"
$PRACTICE_B_ID (owner \"$sub_b\"); without the FHIR demo the bot serves both."
		cases="acting for A; without the FHIR demo the bot holds both records of each case" typo="Marisabel and Marisabell"
	fi
	cat <<TXT

$demo_note
$practices

Search (acting for practice A, the only practice of "$sub"): a person both demo EHRs hold
(same MRN: a practice served by both systems would see them merged), then a common given name:
  curl -sS -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' \\
    -d '{"query":"family:$DEMO_FAMILY given:$DEMO_GIVEN"}' $base/api/v1/search
  curl -sS -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' \\
    -d '{"query":"given:Ava","pagination":{"page":1,"limit":5}}' $base/api/v1/search

Clinical records of that person (filters.recordType: encounter, condition, observation, medication_request,
allergy_intolerance, immunization, procedure, document_reference or diagnostic_report): the observations
of the last twelve months, then every condition; a record both systems hold is one item with both sources:
  curl -sS -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' \\
    -d '{"query":"family:$DEMO_FAMILY given:$DEMO_GIVEN","filters":{"recordType":"observation","dateRange":"$year_ago/$today"}}' $base/api/v1/search
  curl -sS -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' \\
    -d '{"query":"family:$DEMO_FAMILY given:$DEMO_GIVEN","filters":{"recordType":"condition"}}' $base/api/v1/search

Practice B's owner, and the same search acting for A, then for B (X-Business-Id names the practice;
a caller in exactly one practice may leave it out). The FHIR server and the bot hold different Avas:
  export TOKEN_B=$token_b
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "X-Business-Id: $BUSINESS_ID" -H 'Content-Type: application/json' \\
    -d '{"query":"given:Ava"}' $base/api/v1/search
  curl -sS -H "Authorization: Bearer \$TOKEN_B" -H "X-Business-Id: $PRACTICE_B_ID" -H 'Content-Type: application/json' \\
    -d '{"query":"given:Ava"}' $base/api/v1/search
  curl -sS -H "Authorization: Bearer \$TOKEN_B" $base/agents

Who is the same person ($cases; look at each result's "match" and
"possibleMatches"). A typo pair: $typo, other MRNs, one birth date, phone
and address written two ways: one person, "match":{"grade":"certain",…}. Namesakes (one name and birth date,
nothing else in common) and a household (one family, phone and address): two people each, never merged:
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "X-Business-Id: $BUSINESS_ID" -H 'Content-Type: application/json' \\
    -d '{"query":"family:$DEMO_TYPO_FAMILY"}' $base/api/v1/search
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "X-Business-Id: $BUSINESS_ID" -H 'Content-Type: application/json' \\
    -d '{"query":"family:$DEMO_NAMESAKES_FAMILY"}' $base/api/v1/search
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "X-Business-Id: $BUSINESS_ID" -H 'Content-Type: application/json' \\
    -d '{"query":"family:$DEMO_HOUSEHOLD_FAMILY"}' $base/api/v1/search
A probable pair (one name and birth date, one record with no contact detail): two people, each in the
other's "possibleMatches". Link its two records as one person (a member's decision, for A's searches
from the next one on), then search again: one person, "match":{"grade":"confirmed","reasons":["link"],…}:
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "X-Business-Id: $BUSINESS_ID" -H 'Content-Type: application/json' \\
    -d '{"query":"family:$DEMO_PROBABLE_FAMILY"}' $base/api/v1/search
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "X-Business-Id: $BUSINESS_ID" -H 'Content-Type: application/json' \\
    -d '{"decision":"same","records":[{"source":"$DEMO_LINK_SOURCE_1","patientId":"$DEMO_LINK_PATIENT_1"},{"source":"$DEMO_LINK_SOURCE_2","patientId":"$DEMO_LINK_PATIENT_2"}]}' \\
    $base/api/v1/person-links
  curl -sS -H "Authorization: Bearer \$TOKEN" -H "X-Business-Id: $BUSINESS_ID" -H 'Content-Type: application/json' \\
    -d '{"query":"family:$DEMO_PROBABLE_FAMILY"}' $base/api/v1/search
(GET $base/api/v1/person-links lists A's links; DELETE $base/api/v1/person-links/ID removes one.)

Practitioners of practice A ($DEMO_INTEGRATION answers its appointment endpoints), and $DEMO_AGENT_NAME's free slots on $day:
  curl -sS -H "Authorization: Bearer \$TOKEN" $base/agents
  curl -sS -H "Authorization: Bearer \$TOKEN" "$base/agents/$DEMO_AGENT_ID/availability?from=$day&to=$day&duration=30"

Book $start (a repeat with the same Idempotency-Key answers the same appointment), then list:
  curl -sS -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' -H 'Idempotency-Key: demo-$(date +%s)' \\
    -d '{"agentId":"$DEMO_AGENT_ID","start":"$start","durationMinutes":30,"reason":"Check-up",
         "patient":{"firstName":"Ava","lastName":"Alvarez","dateOfBirth":"1980-02-01","email":"ava.alvarez@example.org"}}' \\
    $base/appointment/customer
  curl -sS -H "Authorization: Bearer \$TOKEN" "$base/appointment?agentId=$DEMO_AGENT_ID"

A patient's token (books, lists and changes only its own appointments; it names the practice
with -H "X-Business-Id: $BUSINESS_ID"):
  export PATIENT_TOKEN=\$(bin/carebridge dev-token --sub patient-ava --scope "patient/Appointment.cus")
TXT
	if [ "$DEMO_INTEGRATION" = demo-fhir ]; then
		cat <<TXT

EHR sync: Carebridge polls the demo EHRs every $DEMO_SYNC_INTERVAL for appointment changes made in them directly (the
front desk, not the API) and publishes each as an event with "origin":"ehr". To watch, in another terminal
(one subscription is enough: skip add-webhook if you made the '*' one above):
  set -a; . data/run.env; set +a
  bin/carebridge admin add-webhook --url http://127.0.0.1:9000/ --events appointment.booked,appointment.rescheduled,appointment.cancelled,appointment.status_changed
  bin/carebridge dev-receiver --addr 127.0.0.1:9000 --secret <the whsec_… it printed>
Then, in a third, change appointments at the demo FHIR server's front desk; each event arrives within $DEMO_SYNC_INTERVAL or so:
  bin/carebridge-demo front-desk arrive          # marks arrived the appointment booked above: appointment.status_changed
  bin/carebridge-demo front-desk book            # a booking by phone: appointment.booked (prints its id)
  bin/carebridge-demo front-desk --id ID move    # an hour later: appointment.rescheduled
  bin/carebridge-demo front-desk --id ID cancel  # appointment.cancelled
TXT
	fi
elif [ -n "${demo_note:-}" ]; then
	printf '\n%s\n' "$demo_note"
fi
printf '\nStop with Ctrl-C (the service and the demo EHR systems); make stop also stops the private PostgreSQL.\n'
wait $pid
