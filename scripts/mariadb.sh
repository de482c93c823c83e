#!/usr/bin/env bash
# mariadb.sh: a private MariaDB server for snapstore's tests and benchmarks.
#
#   scripts/mariadb.sh start   install Debian's mariadb-server if absent, start
#                              a server of our own (not the system service) and
#                              load ../shared/data/sakila into database sakila
#   scripts/mariadb.sh stop    stop it (by pid)
#   scripts/mariadb.sh status  exit 0 when it answers
#   scripts/mariadb.sh env     print the variables tests read
#
# A server that already answers on the port with the test user (one that
# scripts/mariadb.sh started from another checkout) is used as it is: start
# loads sakila into it if missing, env prints its socket, and stop leaves
# it running (it stops only the server of this checkout).
#
# Settings (environment): SNAPSTORE_MARIADB_DIR (data dir, default
# .cache/mariadb), SNAPSTORE_MARIADB_PORT (default 23306, loopback only).
# The buffer pool (1 GiB) holds the bench table and the database of 20
# tables together, as a production server holds its working set: with a
# smaller one each scan copies its pages from the OS cache again, and the
# benchmarks would measure that copy (docs/benchmarks.md).
# The test user is snapstore / snapstore-test-pw with all privileges; the
# password is a test fixture, never a real secret.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${SNAPSTORE_MARIADB_DIR:-$here/.cache/mariadb}
port=${SNAPSTORE_MARIADB_PORT:-23306}
sock=$dir/mysqld.sock
pidf=$dir/mysqld.pid
sakila=${SNAPSTORE_SAKILA_DIR:-$here/../shared/data/sakila}
user=snapstore
pw=snapstore-test-pw

log() { printf 'mariadb.sh: %s\n' "$*" >&2; }

ping() { mariadb --protocol=socket -S "$sock" -uroot -e 'SELECT 1' >/dev/null 2>&1; }

# sql_tcp runs mariadb as the test user over TCP on the port.
sql_tcp() { MYSQL_PWD=$pw mariadb --protocol=tcp --connect-timeout=5 -h 127.0.0.1 -P "$port" -u "$user" "$@"; }

# served_socket prints the socket of the server that answers on the port
# with the test user, wherever it was started; it fails when none does.
served_socket() {
	command -v mariadb >/dev/null 2>&1 || return 1
	local s
	s=$(sql_tcp -N -B -e 'SELECT @@socket' 2>/dev/null) && [ -n "$s" ] && echo "$s"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

install() {
	if command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; then return; fi
	log "installing Debian's mariadb-server"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || true
	apt-get install -y -qq mariadb-server mariadb-client >/dev/null
}

start() {
	install
	if ping; then log "already running on 127.0.0.1:$port"; return; fi
	local other
	if other=$(served_socket); then
		log "using the server already running on 127.0.0.1:$port (socket $other)"
		if ! sql_tcp -e 'SELECT 1 FROM sakila.store LIMIT 1' >/dev/null 2>&1; then
			load_sakila sql_tcp
		fi
		return
	fi
	if port_open; then
		log "port $port is taken by a process that does not take the test user; set SNAPSTORE_MARIADB_PORT"
		exit 1
	fi
	mkdir -p "$dir"
	if [ ! -d "$dir/data/mysql" ]; then
		mkdir -p "$dir/data"
		mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$dir/data" \
			--auth-root-authentication-method=socket >"$dir/install.log" 2>&1 ||
			{ cat "$dir/install.log" >&2; exit 1; }
	fi
	# A temporary directory of its own: a server deletes every #sql* file
	# of its tmpdir when it starts (orphans of a crash), and the e2e test
	# that starts and restarts a private server beside the shared one
	# deleted the shared server's temporary tables under its queries.
	mkdir -p "$dir/tmp"
	/usr/sbin/mariadbd --no-defaults --user="$(id -un)" --datadir="$dir/data" --tmpdir="$dir/tmp" \
		--socket="$sock" --pid-file="$pidf" --port="$port" --bind-address=127.0.0.1 \
		--skip-name-resolve --innodb-buffer-pool-size=1G --innodb-log-file-size=256M \
		--max-allowed-packet=64M --log-error="$dir/error.log" \
		--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci &
	for _ in $(seq 1 120); do ping && break; sleep 0.5; done
	ping || { log "did not start; see $dir/error.log"; tail -20 "$dir/error.log" >&2; exit 1; }
	mariadb -S "$sock" -uroot <<SQL
CREATE USER IF NOT EXISTS '$user'@'127.0.0.1' IDENTIFIED BY '$pw';
CREATE USER IF NOT EXISTS '$user'@'localhost' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON *.* TO '$user'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$user'@'localhost' WITH GRANT OPTION;
SQL
	if ! mariadb -S "$sock" -uroot -e 'SELECT 1 FROM sakila.store LIMIT 1' >/dev/null 2>&1; then
		load_sakila
	fi
	log "running on 127.0.0.1:$port (socket $sock)"
}

# load_sakila loads the sample through the given client (root on the
# socket by default).
load_sakila() {
	[ -f "$sakila/sakila-schema.sql" ] || { log "no sakila at $sakila"; exit 1; }
	local client=("$@")
	[ ${#client[@]} -gt 0 ] || client=(mariadb -S "$sock" -uroot)
	"${client[@]}" <"$sakila/sakila-schema.sql"
	"${client[@]}" <"$sakila/sakila-data.sql"
	log "loaded sakila"
}

stop() {
	if [ -f "$pidf" ]; then
		pid=$(cat "$pidf")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
		kill -9 "$pid" 2>/dev/null || true
	fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) ping || served_socket >/dev/null ;;
reload-sakila) if ping; then load_sakila; else load_sakila sql_tcp; fi ;;
env)
	# The socket is this checkout's unless another checkout's server
	# answers on the port.
	if ! ping && other=$(served_socket); then sock=$other; fi
	echo "SNAPSTORE_TEST_MYSQL_HOST=127.0.0.1"
	echo "SNAPSTORE_TEST_MYSQL_PORT=$port"
	echo "SNAPSTORE_TEST_MYSQL_USER=$user"
	echo "SNAPSTORE_TEST_MYSQL_PASSWORD=$pw"
	echo "SNAPSTORE_TEST_MYSQL_SOCKET=$sock"
	;;
*) echo "usage: $0 start|stop|status|reload-sakila|env" >&2; exit 2 ;;
esac
