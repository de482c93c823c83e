#!/usr/bin/env bash
# postgres.sh: a private PostgreSQL cluster for snapstore's tests.
#
#   scripts/postgres.sh start   install Debian's postgresql if absent, create a
#                               cluster of our own with initdb (not the system
#                               service), start it on loopback and create the
#                               test user and the pagila sample database
#   scripts/postgres.sh stop    stop it (pg_ctl stop, fast)
#   scripts/postgres.sh status  exit 0 when it answers
#   scripts/postgres.sh env     print the variables tests read
#
# A server that already answers on the port with the test user (one that
# scripts/postgres.sh started from another checkout) is used as it is:
# start loads pagila into it if missing, env prints its socket directory,
# and stop leaves it running (it stops only the cluster of this checkout).
#
# Settings (environment): SNAPSTORE_POSTGRES_DIR (cluster dir, default
# .cache/postgres), SNAPSTORE_POSTGRES_PORT (default 25432, loopback only).
# The test user is snapstore / snapstore-test-pw, a superuser; the password
# is a test fixture, never a real secret. PostgreSQL refuses to run as root:
# as root, the cluster belongs to the package's postgres user.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${SNAPSTORE_POSTGRES_DIR:-$here/.cache/postgres}
port=${SNAPSTORE_POSTGRES_PORT:-25432}
data=$dir/data
sockdir=$dir/run
pagila=$here/tests/e2e/testdata/pagila.sql
user=snapstore
pw=snapstore-test-pw

log() { printf 'postgres.sh: %s\n' "$*" >&2; }

bindir() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && { echo "$d"; return; }
	done
	return 1
}

# as runs a command as the cluster's owner.
as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

psql_su() { PGOPTIONS="-c client_min_messages=warning" as "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$sockdir" -p "$port" -U postgres "$@"; }

ping() {
	bin=$(bindir 2>/dev/null) || return 1
	as "$bin/pg_isready" -q -h "$sockdir" -p "$port" -U postgres >/dev/null 2>&1
}

# psql_tcp runs psql as the test user over TCP on the port.
psql_tcp() { PGPASSWORD=$pw PGCONNECT_TIMEOUT=5 PGOPTIONS="-c client_min_messages=warning" "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U "$user" "$@"; }

# served_sockdir prints the socket directory of the server that answers on
# the port with the test user, wherever it was started; it fails when none
# does.
served_sockdir() {
	bin=$(bindir 2>/dev/null) || return 1
	local s
	s=$(psql_tcp -d postgres -At -c 'SHOW unix_socket_directories' 2>/dev/null) && [ -n "$s" ] && echo "${s%%,*}"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

install() {
	if bindir >/dev/null 2>&1; then return; fi
	log "installing Debian's postgresql"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || true
	# Installing must not start the system cluster: no service is needed.
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d.snapstore
	chmod +x /usr/sbin/policy-rc.d.snapstore
	[ -e /usr/sbin/policy-rc.d ] || ln -s /usr/sbin/policy-rc.d.snapstore /usr/sbin/policy-rc.d
	apt-get install -y -qq postgresql postgresql-contrib >/dev/null
	[ "$(readlink /usr/sbin/policy-rc.d 2>/dev/null)" = /usr/sbin/policy-rc.d.snapstore ] && rm -f /usr/sbin/policy-rc.d
	rm -f /usr/sbin/policy-rc.d.snapstore
}

start() {
	install
	bin=$(bindir)
	if ping; then log "already running on 127.0.0.1:$port"; return; fi
	local other
	if other=$(served_sockdir); then
		log "using the server already running on 127.0.0.1:$port (socket dir $other)"
		if ! psql_tcp -d pagila -c 'SELECT 1 FROM store LIMIT 1' >/dev/null 2>&1; then
			load_pagila psql_tcp
		fi
		return
	fi
	if port_open; then
		log "port $port is taken by a process that does not take the test user; set SNAPSTORE_POSTGRES_PORT"
		exit 1
	fi
	mkdir -p "$dir" "$sockdir"
	chmod 700 "$sockdir"
	if [ "$(id -u)" = 0 ]; then chown postgres: "$dir" "$sockdir"; fi
	if [ ! -f "$data/PG_VERSION" ]; then
		# The socket is trusted (only this user can reach its directory);
		# TCP needs a password.
		as "$bin/initdb" -D "$data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
			-E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
			{ cat "$dir/initdb.log" >&2; exit 1; }
	fi
	# Loopback only, our own socket directory; the session time zone of
	# new connections is not UTC, so tests see that pulls set their own.
	as "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start -o \
		"-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$sockdir -c timezone=Europe/Paris -c max_connections=200 -c shared_buffers=128MB -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
		>/dev/null || { log "did not start; see $dir/server.log"; tail -20 "$dir/server.log" >&2; exit 1; }
	psql_su -d postgres <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$user') THEN
    CREATE ROLE $user LOGIN SUPERUSER PASSWORD '$pw';
  END IF;
END \$\$;
SQL
	if ! psql_su -d pagila -c 'SELECT 1 FROM store LIMIT 1' >/dev/null 2>&1; then
		load_pagila
	fi
	log "running on 127.0.0.1:$port (socket dir $sockdir)"
}

# load_pagila loads the sample through the given client (psql_su, the
# superuser on the socket, by default; psql_tcp, the test user, who is a
# superuser too, for a server of another checkout).
load_pagila() {
	[ -f "$pagila" ] || { log "no pagila sample at $pagila"; exit 1; }
	local client=${1:-psql_su}
	"$client" -d postgres -c 'DROP DATABASE IF EXISTS pagila' -c "CREATE DATABASE pagila OWNER $user"
	"$client" -d pagila -f - <"$pagila" >/dev/null
	log "loaded pagila"
}

stop() {
	bin=$(bindir) || return 0
	[ -f "$data/postmaster.pid" ] || return 0
	as "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null || true
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) ping || served_sockdir >/dev/null ;;
reload-pagila)
	bin=$(bindir)
	if ping; then load_pagila; else load_pagila psql_tcp; fi
	;;
env)
	# The socket directory is this checkout's unless another checkout's
	# server answers on the port.
	if ! ping && other=$(served_sockdir); then sockdir=$other; fi
	echo "SNAPSTORE_TEST_POSTGRES_HOST=127.0.0.1"
	echo "SNAPSTORE_TEST_POSTGRES_PORT=$port"
	echo "SNAPSTORE_TEST_POSTGRES_USER=$user"
	echo "SNAPSTORE_TEST_POSTGRES_PASSWORD=$pw"
	echo "SNAPSTORE_TEST_POSTGRES_SOCKET_DIR=$sockdir"
	;;
*) echo "usage: $0 start|stop|status|reload-pagila|env" >&2; exit 2 ;;
esac
