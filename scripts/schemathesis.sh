#!/usr/bin/env bash
# schemathesis.sh: fuzz the HTTP API against its own OpenAPI document.
#
#   scripts/schemathesis.sh install   install schemathesis (PyPI) into a venv
#                                     under .cache/schemathesis, if absent
#   scripts/schemathesis.sh run BIN   start BIN (a built snapstore) on a temp
#                                     data dir with a SQLite source, serving
#                                     HTTPS with a CA and a server certificate
#                                     made by `BIN cert`, then run
#                                     schemathesis over /openapi.json with
#                                     every check, once with an admin token
#                                     and once with a reader token (both
#                                     configured by their hash); exit 1 on
#                                     any finding
#
# Settings (environment): SCHEMATHESIS_EXAMPLES (most test cases per
# operation and phase, default 25: the run then takes about a minute here),
# SCHEMATHESIS_SEED (default: a new one, printed, so a finding can be
# replayed), SNAPSTORE_SCHEMATHESIS_DIR (the venv, default
# .cache/schemathesis). The refusals that depend on the data, which no
# schema can state, are allowed per operation in scripts/schemathesis.toml;
# the one rule between parameters, in scripts/schemathesis_hooks.py.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${SNAPSTORE_SCHEMATHESIS_DIR:-$here/.cache/schemathesis}
version=4.32.5
st=$dir/venv/bin/schemathesis

log() { printf 'schemathesis.sh: %s\n' "$*" >&2; }

install() {
	if [ -x "$st" ] && "$st" --version 2>/dev/null | grep -q "version $version\$"; then return; fi
	log "installing schemathesis $version into $dir/venv"
	mkdir -p "$dir"
	if ! python3 -m venv "$dir/venv" >/dev/null 2>&1; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null || true
		apt-get install -y -qq python3-venv >/dev/null
		python3 -m venv "$dir/venv"
	fi
	"$dir/venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$version"
	"$st" --version >/dev/null
}

run() {
	local bin=${1:?usage: $0 run BIN}
	install
	local port base seed status=0
	work=$(mktemp -d)
	pid=
	cleanup() {
		if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
		rm -rf "$work"
	}
	trap cleanup EXIT
	"$bin" sqlite "$work/shop.db" <"$here/examples/shop.sql" >/dev/null
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# A CA and the server's certificate, as an operator without a CA of
	# their own makes them (docs/security.md); clients trust ca.crt only.
	"$bin" cert ca "$work/tls" >/dev/null
	"$bin" cert server "$work/tls" --host 127.0.0.1 >/dev/null
	# The tokens are in the config by their hash only (auth.tokens[].token_hash).
	head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$work/admin.token"
	head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$work/reader.token"
	local admin_hash reader_hash
	admin_hash=$("$bin" token hash <"$work/admin.token")
	reader_hash=$("$bin" token hash <"$work/reader.token")
	cat >"$work/snapstore.yaml" <<EOF
data: $work/data
listen: 127.0.0.1:$port
log: {level: warn}
gc_interval: 0
tls:
  cert_file: $work/tls/server.crt
  key_file: $work/tls/server.key
auth:
  tokens:
    - {name: fuzz-admin, token_hash: "$admin_hash", role: admin}
    - {name: fuzz-reader, token_hash: "$reader_hash", role: reader}
connections:
  - {name: shop, type: sqlite, options: {path: $work/shop.db}}
adapters:
  - {name: products, connection: shop, resource: products, run_on_start: true}
  - {name: order_lines, connection: shop, resource: order_lines, run_on_start: true}
EOF
	"$bin" serve --config "$work/snapstore.yaml" >"$work/server.log" 2>&1 &
	pid=$!
	base=https://127.0.0.1:$port
	for _ in $(seq 1 100); do
		if python3 -c "import ssl,urllib.request; urllib.request.urlopen('$base/readyz', timeout=1, context=ssl.create_default_context(cafile='$work/tls/ca.crt'))" 2>/dev/null; then break; fi
		if ! kill -0 "$pid" 2>/dev/null; then cat "$work/server.log" >&2; log "the server did not start"; exit 1; fi
		sleep 0.1
	done
	seed=${SCHEMATHESIS_SEED:-$RANDOM$RANDOM}
	log "server $base (log $work/server.log); seed $seed; ${SCHEMATHESIS_EXAMPLES:-25} examples per operation and phase"
	for role in admin reader; do
		log "every check, with the $role token"
		# schemathesis.toml sends the token from SNAPSTORE_FUZZ_TOKEN, so it
		# is on no command line.
		# It runs in the temp dir, where it leaves its caches.
		if ! (cd "$work" && SNAPSTORE_FUZZ_TOKEN=$(cat "$work/$role.token") SCHEMATHESIS_HOOKS=$here/scripts/schemathesis_hooks.py \
			"$st" --config-file "$here/scripts/schemathesis.toml" \
			--no-color run "$base/openapi.json" \
			--checks all --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" --seed "$seed" \
			--tls-verify "$work/tls/ca.crt" \
			--workers 1 --request-timeout 30 --warnings off); then
			status=1
			log "findings with the $role token (replay with SCHEMATHESIS_SEED=$seed)"
		fi
	done
	if grep -E 'level=ERROR|panic' "$work/server.log" >&2; then
		log "the server logged errors while fuzzed"
		status=1
	fi
	return $status
}

case "${1:-}" in
install) install ;;
run) shift; run "$@" ;;
*)
	echo "usage: $0 install | run BIN" >&2
	exit 2
	;;
esac
