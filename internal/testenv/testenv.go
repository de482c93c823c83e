// Package testenv holds the fixtures the tests of several packages share:
// the settings of the services the tests run against, as the scripts that
// start them print them (scripts/mariadb.sh env, scripts/postgres.sh env,
// scripts/hbase-standalone.sh env; `make test` exports them), for the tests
// of every package and the benchmark programs, and SyncBuffer, the log
// sink a test reads while other goroutines write it.
//
// A test that needs a service asks for it with MySQL, Postgres or
// HBaseThrift: under `go test -short` (`make test-unit`), or when the
// service's variables are unset, the test skips, saying which variables are
// missing and how to start the service. One rule decides for every package:
// a service is configured when its host, port and user (HBase: its gateway
// address) are all set.
package testenv

import (
	"os"
	"strings"
	"testing"
)

// The environment variables of the test MariaDB (scripts/mariadb.sh env).
const (
	EnvMySQLHost     = "SNAPSTORE_TEST_MYSQL_HOST"
	EnvMySQLPort     = "SNAPSTORE_TEST_MYSQL_PORT"
	EnvMySQLUser     = "SNAPSTORE_TEST_MYSQL_USER"
	EnvMySQLPassword = "SNAPSTORE_TEST_MYSQL_PASSWORD"
	EnvMySQLSocket   = "SNAPSTORE_TEST_MYSQL_SOCKET"
)

// The environment variables of the test PostgreSQL (scripts/postgres.sh env).
const (
	EnvPostgresHost      = "SNAPSTORE_TEST_POSTGRES_HOST"
	EnvPostgresPort      = "SNAPSTORE_TEST_POSTGRES_PORT"
	EnvPostgresUser      = "SNAPSTORE_TEST_POSTGRES_USER"
	EnvPostgresPassword  = "SNAPSTORE_TEST_POSTGRES_PASSWORD"
	EnvPostgresSocketDir = "SNAPSTORE_TEST_POSTGRES_SOCKET_DIR"
)

// EnvHBaseThrift holds the test HBase's Thrift2 gateway as host:port
// (scripts/hbase-standalone.sh env).
const EnvHBaseThrift = "SNAPSTORE_TEST_HBASE_THRIFT"

// MySQLServer is the test MariaDB. Socket is the server's Unix socket; the
// password is a test fixture, never a real secret.
type MySQLServer struct {
	Host, Port, User, Password, Socket string
}

// PostgresServer is the test PostgreSQL; SocketDir holds its Unix socket.
type PostgresServer struct {
	Host, Port, User, Password, SocketDir string
}

// LookupMySQL reads the test MariaDB's settings; ok is false when its host,
// port or user is unset.
func LookupMySQL() (s MySQLServer, ok bool) {
	s = MySQLServer{
		Host:     os.Getenv(EnvMySQLHost),
		Port:     os.Getenv(EnvMySQLPort),
		User:     os.Getenv(EnvMySQLUser),
		Password: os.Getenv(EnvMySQLPassword),
		Socket:   os.Getenv(EnvMySQLSocket),
	}
	return s, missing(EnvMySQLHost, EnvMySQLPort, EnvMySQLUser) == ""
}

// LookupPostgres reads the test PostgreSQL's settings; ok is false when its
// host, port or user is unset.
func LookupPostgres() (s PostgresServer, ok bool) {
	s = PostgresServer{
		Host:      os.Getenv(EnvPostgresHost),
		Port:      os.Getenv(EnvPostgresPort),
		User:      os.Getenv(EnvPostgresUser),
		Password:  os.Getenv(EnvPostgresPassword),
		SocketDir: os.Getenv(EnvPostgresSocketDir),
	}
	return s, missing(EnvPostgresHost, EnvPostgresPort, EnvPostgresUser) == ""
}

// LookupHBaseThrift reads the test HBase's gateway address; ok is false when
// it is unset.
func LookupHBaseThrift() (addr string, ok bool) {
	addr = os.Getenv(EnvHBaseThrift)
	return addr, addr != ""
}

// MySQL returns the test MariaDB, or skips t under -short or when it is not
// configured.
func MySQL(t testing.TB) MySQLServer {
	t.Helper()
	s, _ := LookupMySQL()
	need(t, "MariaDB", "scripts/mariadb.sh", EnvMySQLHost, EnvMySQLPort, EnvMySQLUser)
	return s
}

// Postgres returns the test PostgreSQL, or skips t under -short or when it
// is not configured.
func Postgres(t testing.TB) PostgresServer {
	t.Helper()
	s, _ := LookupPostgres()
	need(t, "PostgreSQL", "scripts/postgres.sh", EnvPostgresHost, EnvPostgresPort, EnvPostgresUser)
	return s
}

// HBaseThrift returns the test HBase's gateway address, or skips t under
// -short or when it is not configured.
func HBaseThrift(t testing.TB) string {
	t.Helper()
	need(t, "HBase", "scripts/hbase-standalone.sh", EnvHBaseThrift)
	return os.Getenv(EnvHBaseThrift)
}

// need skips t when the service is not to be used: under -short, or when
// one of its variables is unset.
func need(t testing.TB, service, script string, vars ...string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: this test needs %s (the unit tests run without services)", service)
	}
	if m := missing(vars...); m != "" {
		t.Skipf("no test %s: %s unset (run %s start, then eval \"$(%s env)\"; make test does both)", service, m, script, script)
	}
}

// missing lists the variables of vars that are unset or empty.
func missing(vars ...string) string {
	var unset []string
	for _, v := range vars {
		if os.Getenv(v) == "" {
			unset = append(unset, v)
		}
	}
	return strings.Join(unset, ", ")
}
