#!/usr/bin/env bash
# chromium.sh: Debian's Chromium for the console's browser test
# (tests/e2e TestConsole, which drives it headless with chromedp).
#
#   scripts/chromium.sh install   install Debian's chromium if absent
#   scripts/chromium.sh status    exit 0 when chromium is installed, printing its version
set -euo pipefail

log() { printf 'chromium.sh: %s\n' "$*" >&2; }

installed() { command -v chromium >/dev/null 2>&1; }

install() {
	if installed; then return; fi
	log "installing Debian's chromium"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || true
	apt-get install -y -qq chromium >/dev/null
	installed || { log "chromium did not install"; exit 1; }
}

case "${1:-}" in
install) install ;;
status) installed && chromium --version 2>/dev/null | head -1 ;;
*)
	echo "usage: $0 install|status" >&2
	exit 2
	;;
esac
