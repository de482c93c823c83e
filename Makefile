# snapstore's make targets. `make` alone lists them.
SHELL := /bin/bash
GO ?= go
BIN := bin/snapstore
# Test packages; tests that need MariaDB read the SNAPSTORE_TEST_MYSQL_* variables
# printed by scripts/mariadb.sh env, tests that need PostgreSQL read the
# SNAPSTORE_TEST_POSTGRES_* ones of scripts/postgres.sh env, tests that need HBase
# read SNAPSTORE_TEST_HBASE_* (internal/testenv reads them all, and skips such a
# test under -short or when its variables are unset). tests/e2e comes
# first: go test starts packages in the order given, and the end-to-end
# tests, the longest package by far and mostly waiting on the processes
# they start, then run beside the others instead of after them.
PKGS ?= ./tests/e2e ./...
TESTFLAGS ?= -count=1 -timeout 25m
# make test runs PKGS under the race detector; RACE= runs them without. In
# tests/e2e it watches only the test process: the binaries it starts are
# built without it.
RACE ?= -race

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# The version `snapstore version` and /healthz report.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build
build: ## build bin/snapstore
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/snapstore

# The sample source is created from examples/shop.sql on the first run.
examples/shop.db: | build
	$(BIN) sqlite examples/shop.db < examples/shop.sql

# make run LISTEN=127.0.0.1:8081 serves on another address (client commands
# then need --server http://127.0.0.1:8081 or SNAPSTORE_LISTEN set the same);
# DATA=DIR keeps the store in another directory than ./data.
LISTEN ?=
DATA ?=

.PHONY: run
run: build examples/shop.db ## build and start snapstore on ./data with the sample SQLite source (README); LISTEN=host:port, DATA=dir to move it
	$(BIN) serve --config examples/snapstore.yaml $(if $(LISTEN),--listen $(LISTEN)) $(if $(DATA),--data $(DATA))

.PHONY: reset-sample
reset-sample: ## forget the sample: delete ./data (DATA=dir: that one) and examples/shop.db (stop `make run` first)
	@# A server still running holds its files open (seen in /proc on Linux):
	@# deleting them under it would lose nothing it could not rewrite, but
	@# leave it serving a store that no longer exists on disk. DATA names
	@# the directory `make run DATA=dir` used; one that exists without a
	@# Pebble MANIFEST is not a store, and is not deleted.
	@d='$(abspath $(or $(DATA),data))'; \
	if [ -e "$$d" ] && ! ls "$$d"/MANIFEST-* >/dev/null 2>&1; then \
		echo "reset-sample: $$d holds no snapstore store (no MANIFEST-*); not deleting it" >&2; exit 1; fi; \
	if ls -l /proc/[0-9]*/fd 2>/dev/null | grep -qF -- "$$d/"; then \
		echo "reset-sample: a process still has $$d open; stop \`make run\` (Ctrl-C) first" >&2; exit 1; fi; \
	echo "rm -rf $$d examples/shop.db examples/shop.db-*"; rm -rf "$$d" examples/shop.db examples/shop.db-*

# make dist: one reproducible archive per platform in $(DISTDIR), with
# SHA256SUMS. The same commit, VERSION and Go toolchain give the same bytes:
# -trimpath and no VCS stamp in the binary, the tar's entries sorted with
# mtime SOURCE_DATE_EPOCH (the commit's time), owner 0 and fixed modes, and
# gzip without a name or time. GNU tar is needed (gtar on macOS).
DISTDIR ?= dist
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
DIST_FILES := LICENSE README.md CHANGELOG.md docs/snapstore.sample.yaml examples/snapstore.service
# The docs the README links to, at the same paths (not the console's
# screenshots).
DIST_DOCS := $(sort $(wildcard docs/*.md docs/rfcs/*.md)) docs/snapstore.sample.yaml
TAR ?= $(shell command -v gtar 2>/dev/null || echo tar)

.PHONY: dist
dist: ## reproducible release archives (linux, darwin; amd64, arm64) in dist/ with SHA256SUMS (VERSION=v1.2.3)
	@$(TAR) --version 2>/dev/null | grep -q 'GNU tar' || { echo "make dist: needs GNU tar (on macOS: brew install gnu-tar)"; exit 1; }
	@case "$(VERSION)" in *[!A-Za-z0-9._+-]*|"") echo "make dist: VERSION $(VERSION) has characters a file name should not"; exit 1;; esac
	rm -rf $(DISTDIR) && mkdir -p $(DISTDIR)
	set -e; for p in $(DIST_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=snapstore-$(VERSION)-$$os-$$arch; stage=$(DISTDIR)/.stage/$$name; \
		mkdir -p $$stage; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=false \
			-ldflags "-s -w -X main.version=$(VERSION)" -o $$stage/snapstore ./cmd/snapstore; \
		chmod 0755 $$stage/snapstore; \
		for f in $(DIST_FILES); do install -m 0644 $$f $$stage/$$(basename $$f); done; \
		for f in $(DIST_DOCS); do install -D -m 0644 $$f $$stage/$$f; done; \
		$(TAR) --format=ustar --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
			--mode=u+rwX,go+rX,go-w -C $(DISTDIR)/.stage -cf - $$name | gzip -n -9 > $(DISTDIR)/$$name.tar.gz; \
	done
	rm -rf $(DISTDIR)/.stage
	cd $(DISTDIR) && if command -v sha256sum >/dev/null; then sha256sum *.tar.gz; else shasum -a 256 *.tar.gz; fi > SHA256SUMS
	@cat $(DISTDIR)/SHA256SUMS

.PHONY: install
install: ## go install the snapstore binary
	$(GO) install ./cmd/snapstore

.PHONY: deps
deps: ## install and start what the tests need (MariaDB, PostgreSQL, HBase, Chromium for the console test, schemathesis, pyarrow/pandas/polars/duckdb)
	scripts/mariadb.sh start
	scripts/postgres.sh start
	scripts/chromium.sh install
	scripts/schemathesis.sh install
	scripts/pyclients.sh install
	@if [ -x scripts/hbase-standalone.sh ]; then \
		scripts/hbase-standalone.sh start || { \
			if [ -n "$$CI" ]; then echo "make: HBase could not be started; CI must run the HBase suite, so this fails"; exit 1; fi; \
			echo "make: HBase could not be started (see the lines above); the HBase tests will say so and skip"; }; \
	fi

# schemathesis (make test, make fuzz-api) generates at most this many test
# cases per API operation and phase: 25 takes about a minute here for the
# two tokens; the fuzzer's seed is printed, SCHEMATHESIS_SEED=N replays it.
SCHEMATHESIS_EXAMPLES ?= 25

.PHONY: test
test: deps build ## install and start MariaDB, PostgreSQL, HBase, Chromium and schemathesis, then run the whole suite (-race) and fuzz the API
	$(GO) vet ./...
	@# The snapshot semantics suite again on the real HBase
	@# (scripts/snapshot-hbase.sh) runs beside the main pass: its tests
	@# wait on HBase round trips most of the time, which the main pass's
	@# CPU fills. Its output follows the main pass's.
	set -a; eval "$$(scripts/mariadb.sh env)"; eval "$$(scripts/postgres.sh env)"; if [ -x scripts/hbase-standalone.sh ]; then eval "$$(scripts/hbase-standalone.sh env)"; fi; set +a; \
	log=$$(mktemp); GO=$(GO) scripts/snapshot-hbase.sh $(TESTFLAGS) > $$log 2>&1 & hbase=$$!; \
	$(GO) test $(RACE) $(TESTFLAGS) $(PKGS); main=$$?; \
	wait $$hbase; rc=$$?; echo "--- the snapshot suite on HBase (scripts/snapshot-hbase.sh):"; cat $$log; rm -f $$log; \
	[ $$main -eq 0 ] && [ $$rc -eq 0 ]
	SCHEMATHESIS_EXAMPLES=$(SCHEMATHESIS_EXAMPLES) scripts/schemathesis.sh run $(BIN)

.PHONY: test-unit
test-unit: ## go test -short -race over every package with no service running (no make deps): tests that need MariaDB, PostgreSQL, HBase or Chromium skip, saying so
	env -u SNAPSTORE_SNAPSHOT_BACKEND $(GO) test -short -race -count=1 -timeout 15m ./...

.PHONY: fuzz-api
fuzz-api: build ## schemathesis over /openapi.json, every check, reader and admin tokens (SCHEMATHESIS_EXAMPLES=25)
	scripts/schemathesis.sh install
	SCHEMATHESIS_EXAMPLES=$(SCHEMATHESIS_EXAMPLES) scripts/schemathesis.sh run $(BIN)

.PHONY: screenshots
screenshots: ## retake the console screenshots of docs/console.md (needs MariaDB and Chromium: make deps)
	scripts/mariadb.sh start
	scripts/chromium.sh install
	set -a; eval "$$(scripts/mariadb.sh env)"; set +a; \
	$(GO) test -count=1 -run 'TestConsole$$' ./tests/e2e -console.screenshots=$(CURDIR)/docs/console

# staticcheck at a pinned version, installed by `go install` (through the Go
# module proxy of the environment) into .cache on first use.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := .cache/staticcheck/$(STATICCHECK_VERSION)/staticcheck

$(STATICCHECK):
	GOBIN=$(CURDIR)/$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

.PHONY: lint
lint: $(STATICCHECK) ## gofmt, go vet, staticcheck and the structural lint (internal/lint: layers, imports, comments, docs/architecture.md's map)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GO) test -count=1 ./internal/lint

# Benchmarks of the main job on a synthetic table; not part of `make test`.
ROWS ?= 2000000
RSS_SCALE ?= 10
BENCHFLAGS ?=
.PHONY: bench
bench: build ## measure runs (MariaDB, PostgreSQL, a database of 20 tables), storage, memory, HTTP and HBase against their goals; writes docs/benchmarks.md (ROWS=2000000 RSS_SCALE=10)
	scripts/mariadb.sh start
	scripts/postgres.sh start
	@command -v zstd >/dev/null && command -v wrk >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zstd wrk >/dev/null; }
	set -a; eval "$$(scripts/mariadb.sh env)"; eval "$$(scripts/postgres.sh env)"; if [ -x scripts/hbase-standalone.sh ] && scripts/hbase-standalone.sh status >/dev/null 2>&1; then eval "$$(scripts/hbase-standalone.sh env)"; fi; set +a; \
	$(GO) run ./tests/bench -rows $(ROWS) -rss-scale $(RSS_SCALE) -bin $(BIN) -out docs/benchmarks.md $(BENCHFLAGS)

# Partitioned runs: one node against a cluster on one HBase, bytes per
# compression, a coordinator's memory with an owner down; not part of `make test`.
NODES ?= 3
.PHONY: bench-cluster
bench-cluster: build ## partitioned runs against one node on one HBase; writes their section of docs/benchmarks.md (ROWS=2000000 NODES=3)
	scripts/hbase-standalone.sh start
	set -a; eval "$$(scripts/hbase-standalone.sh env)"; set +a; \
	$(GO) run ./tests/benchcluster -rows $(ROWS) -nodes $(NODES) -bin $(BIN) -out docs/benchmarks.md

.PHONY: runpath
runpath: ## follow one run through the source, from startLocal to the store: the files it visits and how often (docs/architecture.md)
	$(GO) run ./tests/runpath -largest 10

.PHONY: bench-go
bench-go: ## one pass of the go test -bench micro-benchmarks of store/pebble and snapshot
	$(GO) test -run XXX -bench . -benchtime 1x ./store/pebble ./snapshot
