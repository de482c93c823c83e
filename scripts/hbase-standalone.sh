#!/usr/bin/env bash
# hbase-standalone.sh: a private Apache HBase for snapstore's tests and
# benchmarks, from jars fetched with Maven (scripts/hbase/pom.xml).
#
#   scripts/hbase-standalone.sh start    fetch the jars if needed, start HBase in
#                                        standalone mode (master, regionserver and
#                                        ZooKeeper in one JVM) and the Thrift2
#                                        gateway, on loopback; idempotent
#   scripts/hbase-standalone.sh stop     stop what start started (by pid)
#   scripts/hbase-standalone.sh status   exit 0 when the master and the Thrift2
#                                        port answer
#   scripts/hbase-standalone.sh env      print SNAPSTORE_TEST_HBASE_THRIFT=host:port
#                                        and SNAPSTORE_HBASE_DIR when HBase is up,
#                                        nothing otherwise
#   scripts/hbase-standalone.sh stop-thrift | start-thrift
#                                        stop or start only the Thrift2 gateway
#                                        on SNAPSTORE_HBASE_THRIFT_PORT; the
#                                        outage test runs a second gateway of
#                                        its own this way
#   scripts/hbase-standalone.sh reset    stop, then delete the data directory
#
# An HBase that this script started from another checkout and that answers
# on the Thrift2 port is used as it is: start, status and env act on it
# (env prints its work dir as SNAPSTORE_HBASE_DIR), while stop and reset act
# only on this checkout's. It is found by the gateway process listening on
# the port (ss), whose command line holds its work dir.
#
# Settings (environment):
#   SNAPSTORE_HBASE_DIR         work dir (jars, config, data, logs, pids);
#                               default .cache/hbase in the checkout
#   SNAPSTORE_HBASE_ZK_PORT     ZooKeeper client port, default 22181
#   SNAPSTORE_HBASE_THRIFT_PORT Thrift2 port, default 29090
#   SNAPSTORE_HBASE_MASTER_PORT master RPC port, default 22100 (HBase's 16000)
#   SNAPSTORE_HBASE_REGIONSERVER_PORT regionserver RPC port, default 22120
#                               (HBase's 16020)
#   The default ports lie below Linux's ephemeral range (32768-60999 by
#   default, net.ipv4.ip_local_port_range): a port inside it can be held by
#   any outgoing connection of the moment (ZooKeeper's own client, Maven),
#   and the master then fails to bind it.
#   SNAPSTORE_HBASE_XMX         master JVM heap, default 2g (Thrift2: 256m)
#   SNAPSTORE_HBASE_WAIT        seconds to wait for start, default 240
#
# The jars are copied by `mvn dependency:copy-dependencies` from Maven's own
# local repository (~/.m2 by default) into $dir/lib. HBase 2.6.1 is used: it is
# the newest 2.6 release whose hbase-server, hbase-thrift and hbase-rest jars
# the package registry reachable here serves (see docs/hbase.md).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${SNAPSTORE_HBASE_DIR:-$here/.cache/hbase}
zkport=${SNAPSTORE_HBASE_ZK_PORT:-22181}
thriftport=${SNAPSTORE_HBASE_THRIFT_PORT:-29090}
masterport=${SNAPSTORE_HBASE_MASTER_PORT:-22100}
rsport=${SNAPSTORE_HBASE_REGIONSERVER_PORT:-22120}
xmx=${SNAPSTORE_HBASE_XMX:-2g}
wait_s=${SNAPSTORE_HBASE_WAIT:-240}
pom=$here/scripts/hbase/pom.xml
set_paths() {
	lib=$dir/lib
	conf=$dir/conf
	data=$dir/data
	logs=$dir/logs
	master_pid=$dir/master.pid
	thrift_pid=$dir/thrift-$thriftport.pid
}
set_paths

log() { printf 'hbase-standalone.sh: %s\n' "$*" >&2; }

# JDK 17 flags, as HBase's bin/hbase sets them for JDK 11 and later.
jdk_flags=(
	-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true
	--add-modules jdk.unsupported
	--add-opens java.base/java.io=ALL-UNNAMED
	--add-opens java.base/java.nio=ALL-UNNAMED
	--add-opens java.base/sun.nio.ch=ALL-UNNAMED
	--add-opens java.base/java.lang=ALL-UNNAMED
	--add-opens java.base/jdk.internal.ref=ALL-UNNAMED
	--add-opens java.base/java.lang.reflect=ALL-UNNAMED
	--add-opens java.base/java.util=ALL-UNNAMED
	--add-opens java.base/java.util.concurrent=ALL-UNNAMED
	--add-exports java.base/jdk.internal.misc=ALL-UNNAMED
	--add-exports java.security.jgss/sun.security.krb5=ALL-UNNAMED
	--add-exports java.base/sun.net.dns=ALL-UNNAMED
	--add-exports java.base/sun.net.util=ALL-UNNAMED
)

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

up() { alive "$master_pid" && alive "$thrift_pid" && port_open "$thriftport"; }

# served_dir prints the work dir of the HBase whose Thrift2 gateway listens
# on the port, wherever this script started it; it fails when there is
# none or it is not one of ours.
served_dir() {
	command -v ss >/dev/null 2>&1 || return 1
	local pid d
	pid=$(ss -ltnpH "sport = :$thriftport" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	d=$(tr '\0' '\n' <"/proc/$pid/cmdline" | sed -n 's/^-Dhbase\.home\.dir=//p' | head -n 1)
	[ -n "$d" ] && [ -f "$d/master.pid" ] && echo "$d"
}

# adopt points this script at the HBase of another checkout when this
# checkout's is not up and that one is.
adopt() {
	up && return 0
	local other
	other=$(served_dir) || return 0
	[ "$other" != "$dir" ] || return 0
	local own=$dir
	dir=$other
	set_paths
	if ! up; then
		dir=$own
		set_paths
		return 0
	fi
	log "using the HBase started from $dir"
}

fetch() {
	if [ -f "$lib/.stamp" ] && [ "$lib/.stamp" -nt "$pom" ]; then return; fi
	if ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
		log "installing Debian's maven and openjdk-17-jdk-headless"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null || true
		apt-get install -y -qq maven openjdk-17-jdk-headless >/dev/null ||
			{ log "could not install maven and a JDK 17"; exit 1; }
	fi
	log "fetching HBase jars with Maven into $lib"
	rm -rf "$lib"
	mkdir -p "$lib"
	(cd "$here/scripts/hbase" && mvn -q -B dependency:copy-dependencies \
		-DoutputDirectory="$lib" -DincludeScope=runtime) >"$dir/mvn.log" 2>&1 ||
		{ tail -20 "$dir/mvn.log" >&2; log "Maven could not fetch the jars; see $dir/mvn.log"; exit 1; }
	touch "$lib/.stamp"
	log "fetched $(ls "$lib"/*.jar | wc -l) jars, $(du -sh "$lib" | cut -f1)"
}

write_conf() {
	mkdir -p "$conf" "$data" "$logs"
	cat >"$conf/hbase-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.cluster.distributed</name><value>false</value></property>
  <property><name>hbase.rootdir</name><value>file://$data/root</value></property>
  <property><name>hbase.tmp.dir</name><value>$data/tmp</value></property>
  <property><name>hbase.zookeeper.property.dataDir</name><value>$data/zk</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$zkport</value></property>
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.thrift.info.port</name><value>-1</value></property>
  <property><name>hbase.rest.info.port</name><value>-1</value></property>
  <property><name>hbase.master.port</name><value>$masterport</value></property>
  <property><name>hbase.regionserver.port</name><value>$rsport</value></property>
  <property><name>hbase.master.ipc.address</name><value>127.0.0.1</value></property>
  <property><name>hbase.regionserver.ipc.address</name><value>127.0.0.1</value></property>
  <property><name>hbase.master.hostname</name><value>127.0.0.1</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>127.0.0.1</value></property>
  <property><name>hbase.regionserver.thrift.port</name><value>$thriftport</value></property>
  <property><name>hbase.thrift.server.socket.read.timeout</name><value>600000</value></property>
  <!-- The ZooKeeper session of the region server, which lives in the
       master's JVM: on a busy two-core machine that JVM has stalled for
       7 s, past the 10 s session the embedded ZooKeeper granted, and the
       region server aborted, failing every test after it. 90 s (HBase's
       default request) needs the server's maximum raised (20 ticks). -->
  <property><name>zookeeper.session.timeout</name><value>90000</value></property>
  <property><name>hbase.zookeeper.property.tickTime</name><value>6000</value></property>
  <property><name>hbase.zookeeper.property.maxSessionTimeout</name><value>120000</value></property>
</configuration>
XML
	cat >"$conf/log4j2.properties" <<'PROPS'
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:snapstore.log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger = INFO,file
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = WARN
logger.hadoop.name = org.apache.hadoop.hbase.shaded
logger.hadoop.level = WARN
PROPS
}

java_cmd() { # name xmx class args...
	local name=$1 heap=$2
	shift 2
	exec java -Xms64m -Xmx"$heap" -XX:+UseG1GC -Djava.net.preferIPv4Stack=true \
		"${jdk_flags[@]}" \
		-Dlog4j2.configurationFile="$conf/log4j2.properties" \
		-Dsnapstore.log.file="$logs/$name.log" \
		-Dhbase.log.dir="$logs" -Dhbase.home.dir="$dir" \
		-cp "$conf:$lib/*" "$@"
}

start_thrift() {
	if alive "$thrift_pid" && port_open "$thriftport"; then return; fi
	mkdir -p "$logs"
	: >"$logs/thrift-$thriftport.log"
	java_cmd "thrift-$thriftport" 256m org.apache.hadoop.hbase.thrift2.ThriftServer \
		-b 127.0.0.1 -p "$thriftport" start >"$logs/thrift-$thriftport.out" 2>&1 </dev/null &
	echo $! >"$thrift_pid"
	local deadline=$((SECONDS + wait_s))
	until port_open "$thriftport"; do
		if ! alive "$thrift_pid"; then
			tail -n 20 "$logs/thrift-$thriftport.out" "$logs/thrift-$thriftport.log" >&2 || true
			log "the Thrift2 gateway exited; see $logs/thrift-$thriftport.log"
			exit 1
		fi
		[ $SECONDS -lt $deadline ] || { log "the Thrift2 port $thriftport did not open in ${wait_s}s"; exit 1; }
		sleep 0.5
	done
}

start() {
	if up; then log "already running; Thrift2 on 127.0.0.1:$thriftport"; return; fi
	mkdir -p "$dir"
	fetch
	write_conf
	local t0=$SECONDS
	if ! alive "$master_pid"; then
		local p
		for p in "$zkport:SNAPSTORE_HBASE_ZK_PORT" "$masterport:SNAPSTORE_HBASE_MASTER_PORT" "$rsport:SNAPSTORE_HBASE_REGIONSERVER_PORT"; do
			if port_open "${p%%:*}"; then
				log "port ${p%%:*} is taken by another process; set ${p#*:}"
				exit 1
			fi
		done
		: >"$logs/master.log"
		java_cmd master "$xmx" org.apache.hadoop.hbase.master.HMaster start \
			>"$logs/master.out" 2>&1 </dev/null &
		echo $! >"$master_pid"
		local deadline=$((SECONDS + wait_s))
		until grep -q 'Master has completed initialization' "$logs/master.log" 2>/dev/null; do
			if ! alive "$master_pid"; then
				tail -n 30 "$logs/master.out" "$logs/master.log" >&2 || true
				log "the master exited; see $logs/master.log"
				exit 1
			fi
			if [ $SECONDS -ge $deadline ]; then
				log "the master did not complete initialization in ${wait_s}s; see $logs/master.log"
				exit 1
			fi
			sleep 0.5
		done
	fi
	start_thrift
	log "running (started in $((SECONDS - t0))s); Thrift2 on 127.0.0.1:$thriftport, ZooKeeper on 127.0.0.1:$zkport, logs in $logs"
}

stop_pid() { # pidfile
	local f=$1 pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

stop() {
	local f
	for f in "$dir"/thrift-*.pid; do [ -e "$f" ] && stop_pid "$f"; done
	stop_pid "$master_pid"
	log "stopped"
}

case "${1:-}" in
start | status | env) adopt ;;
esac

case "${1:-}" in
start) start ;;
stop) stop ;;
status)
	if up; then echo "HBase up; Thrift2 on 127.0.0.1:$thriftport"; else echo "HBase down"; exit 1; fi
	;;
env)
	# SNAPSTORE_HBASE_DIR lets tests run this script (start-thrift,
	# stop-thrift) on this HBase from any checkout.
	if up; then printf 'SNAPSTORE_TEST_HBASE_THRIFT=127.0.0.1:%s\nSNAPSTORE_HBASE_DIR=%s\n' "$thriftport" "$dir"; fi
	;;
stop-thrift) stop_pid "$thrift_pid" ;;
start-thrift)
	alive "$master_pid" || { log "the master is not running; run start"; exit 1; }
	start_thrift
	;;
reset)
	stop
	rm -rf "$data" "$logs"
	;;
*)
	echo "usage: $0 start|stop|status|env|stop-thrift|start-thrift|reset" >&2
	exit 2
	;;
esac
