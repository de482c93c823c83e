#!/usr/bin/env bash
# pyclients.sh: the Python data tools that read snapstore's Arrow and
# Parquet answers in the tests (tests/e2e/arrow_test.go).
#
#   scripts/pyclients.sh install   install pinned pyarrow, pandas, polars and
#                                  duckdb (PyPI) into a venv under
#                                  .cache/pyclients, if absent
#   scripts/pyclients.sh python    print the venv's python path (exit 1,
#                                  saying so, when it is not installed)
#
# Settings (environment): SNAPSTORE_PYCLIENTS_DIR (the venv's parent,
# default .cache/pyclients).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${SNAPSTORE_PYCLIENTS_DIR:-$here/.cache/pyclients}
py=$dir/venv/bin/python
pins=(pyarrow==26.0.1 pandas==3.1.1 polars==2.1.0 duckdb==2.0.1)

log() { printf 'pyclients.sh: %s\n' "$*" >&2; }

installed() {
	[ -x "$py" ] && [ "$(cat "$dir/venv/pins" 2>/dev/null)" = "${pins[*]}" ]
}

install() {
	if installed; then return; fi
	log "installing ${pins[*]} into $dir/venv"
	mkdir -p "$dir"
	if ! python3 -m venv "$dir/venv" >/dev/null 2>&1; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null || true
		apt-get install -y -qq python3-venv >/dev/null
		python3 -m venv "$dir/venv"
	fi
	"$dir/venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}"
	"$py" -c 'import pyarrow, pandas, polars, duckdb'
	echo "${pins[*]}" >"$dir/venv/pins"
}

case "${1:-}" in
install) install ;;
python)
	# The path alone would send a caller to a file that is not there.
	if ! installed; then
		log "not installed in $dir: run scripts/pyclients.sh install (or SNAPSTORE_PYCLIENTS_DIR=DIR for a venv elsewhere)"
		exit 1
	fi
	echo "$py"
	;;
*)
	echo "usage: $0 install|python" >&2
	exit 2
	;;
esac
