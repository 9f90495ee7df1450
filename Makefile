# Carebridge. The two set-up commands: `make run` and `make test`.
SHELL := /bin/bash
GO    ?= go
PKGS  := ./...

.PHONY: run stop test build generate check-generated lint bench bench-baseline fuzz clean

## run: start the service on the embedded defaults and print how to call it
run:
	@bash scripts/run.sh

## stop: stop what `make run` left running (demo EHR systems, the private PostgreSQL)
stop:
	@bash scripts/stop.sh

## test: start/install what the tests need, then run every test (race detector on)
test: lint check-generated
	@bash scripts/ensure-services.sh
	@VERSITYGW_BIN="$$(bash scripts/install-versitygw.sh)" && \
		CLAMD_BIN="$$(bash scripts/install-clamd.sh)" && \
		MEDPLUM_DIR="$$(bash scripts/install-medplum.sh)" && \
		browser="$$(bash scripts/install-browser.sh)" && eval "$$browser" && \
		export VERSITYGW_BIN CLAMD_BIN MEDPLUM_DIR CHROMIUM_BIN PLAYWRIGHT_DIR && \
		$(GO) test -race -count=1 $(PKGS)

build:
	$(GO) build -o bin/carebridge ./cmd/carebridge

## generate: regenerate the moq mocks
generate:
	$(GO) generate $(PKGS)

## check-generated: fail when the committed mocks are stale
check-generated:
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	for f in $$(git ls-files '*_moq_test.go'); do cp "$$f" "$$tmp/$${f//\//_}"; done && \
	$(GO) generate $(PKGS) && \
	for f in $$(git ls-files '*_moq_test.go'); do \
		cmp -s "$$f" "$$tmp/$${f//\//_}" || { echo "stale mock: $$f (run make generate and commit)"; exit 1; }; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

## bench: performance figures (blob transfer vs direct S3, business reads vs direct pgx, refusing hostile JSON, matching quality and time)
bench:
	@bash scripts/ensure-services.sh
	@command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; } >&2
	@VERSITYGW_BIN="$$(bash scripts/install-versitygw.sh)" && \
		CLAMD_BIN="$$(bash scripts/install-clamd.sh)" && \
		MEDPLUM_DIR="$$(bash scripts/install-medplum.sh)" && \
		export VERSITYGW_BIN CLAMD_BIN MEDPLUM_DIR && \
		$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 45m ./test/bench
	@echo "== the HTTP edge of the business reads, in process (no sockets, no database)"
	@$(GO) test -run '^$$' -bench BusinessReads -benchmem -count 3 ./adapters/httpapi
	@echo "== refusing 1 MiB of JSON nesting, and other large bodies, in process"
	@$(GO) test -run '^$$' -bench RefuseDeepJSON -benchmem ./adapters/httpapi
	@echo "== matching: quality on a synthetic population, time for one answer (3 systems x 100 records)"
	@$(GO) test -run '^$$' -bench 'MatchAnswer|MatchQuality' -benchtime 1x ./core/ehr/matchtest

## bench-baseline: cached search of this build beside the build of BASELINE (a commit; default the
## last before matching), side by side in alternating rounds
BASELINE ?= 486eb5f
bench-baseline:
	@bash scripts/ensure-services.sh
	@command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; } >&2
	@dir=$$(mktemp -d) && trap 'git worktree remove --force $$dir/src >/dev/null 2>&1; rm -rf $$dir' EXIT && \
		git worktree add -q --detach $$dir/src $(BASELINE) && \
		(cd $$dir/src && $(GO) build -o $$dir/carebridge ./cmd/carebridge) && \
		VERSITYGW_BIN="$$(bash scripts/install-versitygw.sh)" && export VERSITYGW_BIN && \
		BASELINE_BIN=$$dir/carebridge $(GO) test -run '^$$' -bench 'SearchBaseline' -benchtime 1x -timeout 20m ./test/bench

## fuzz: a short run of every fuzz target
fuzz:
	@for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$t/*_test.go | cut -d' ' -f2); do \
			echo "== $$t $$f"; $(GO) test -run=XXX -fuzz="^$$f\$$" -fuzztime=$${FUZZTIME:-20s} $$t || exit 1; \
		done; \
	done

## clean: stop, then remove generated data: data/, bin/, the private PostgreSQL cluster
clean:
	@bash scripts/clean.sh
