package e2e

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/big"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// mysqlEnv is the test MariaDB as printed by scripts/mariadb.sh env.
type mysqlEnv struct {
	Host, Port, User, Password, Socket string
}

func getMySQLEnv(t testing.TB) mysqlEnv {
	t.Helper()
	e := mysqlEnv{
		Host:     os.Getenv("SNAPSTORE_TEST_MYSQL_HOST"),
		Port:     os.Getenv("SNAPSTORE_TEST_MYSQL_PORT"),
		User:     os.Getenv("SNAPSTORE_TEST_MYSQL_USER"),
		Password: os.Getenv("SNAPSTORE_TEST_MYSQL_PASSWORD"),
		Socket:   os.Getenv("SNAPSTORE_TEST_MYSQL_SOCKET"),
	}
	if e.Host == "" || e.Port == "" {
		t.Skip("SNAPSTORE_TEST_MYSQL_* unset: run through `make test` (scripts/mariadb.sh starts MariaDB)")
	}
	return e
}

func (e mysqlEnv) open(t testing.TB, db string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = e.Host + ":" + e.Port
	cfg.User = e.User
	cfg.Passwd = e.Password
	cfg.DBName = db
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := sql.OpenDB(conn)
	t.Cleanup(func() { h.Close() })
	return h
}

// cloneSakila copies database sakila into a new database name with
// mariadb-dump, so that tests may change it.
func (e mysqlEnv) cloneSakila(t testing.TB, name string) {
	t.Helper()
	root := e.open(t, "")
	if _, err := root.Exec("DROP DATABASE IF EXISTS `" + name + "`"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Exec("CREATE DATABASE `" + name + "`"); err != nil {
		t.Fatal(err)
	}
	args := []string{"-h", e.Host, "-P", e.Port, "-u", e.User}
	dump := exec.Command("mariadb-dump", append(args, "--triggers", "--routines", "sakila")...)
	dump.Env = append(os.Environ(), "MYSQL_PWD="+e.Password)
	load := exec.Command("mariadb", append(args, name)...)
	load.Env = dump.Env
	pipe, err := dump.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	load.Stdin = pipe
	var lerr strings.Builder
	load.Stderr = &lerr
	if err := dump.Start(); err != nil {
		t.Fatal(err)
	}
	if err := load.Run(); err != nil {
		t.Fatalf("loading %s: %v: %s", name, err, lerr.String())
	}
	if err := dump.Wait(); err != nil {
		t.Fatalf("dumping sakila: %v", err)
	}
	t.Cleanup(func() { root.Exec("DROP DATABASE IF EXISTS `" + name + "`") })
}

// srcColumn is a source column with its information_schema type.
type srcColumn struct {
	Name     string
	DataType string // information_schema.COLUMNS.DATA_TYPE, lower case
	Unsigned bool
}

// canonRow is a row in canonical form: column name -> canonical text, with
// NULL as the absent-from-map... no: NULL as the distinct marker below.
type canonRow map[string]string

// nullMark is the canonical form of NULL, which no text value can equal.
const nullMark = "\x00NULL"

// sourceTable reads a whole source table and canonicalises every row,
// keyed by the canonical text of its key columns joined with "/".
func sourceTable(t testing.TB, db *sql.DB, schema, table string, key []string) map[string]canonRow {
	t.Helper()
	cols := sourceColumns(t, db, schema, table)
	q := "SELECT * FROM `" + schema + "`.`" + table + "`"
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	names, _ := rows.Columns()
	out := map[string]canonRow{}
	raw := make([]sql.RawBytes, len(names))
	ptrs := make([]any, len(names))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		r := canonRow{}
		for i, n := range names {
			if raw[i] == nil {
				r[n] = nullMark
				continue
			}
			r[n] = canonSource(cols[n], raw[i])
		}
		out[keyOf(r, key)] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sourceColumns(t testing.TB, db *sql.DB, schema, table string) map[string]srcColumn {
	t.Helper()
	rows, err := db.Query(`SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, schema, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]srcColumn{}
	for rows.Next() {
		var c srcColumn
		var ct string
		if err := rows.Scan(&c.Name, &c.DataType, &ct); err != nil {
			t.Fatal(err)
		}
		c.DataType = strings.ToLower(c.DataType)
		c.Unsigned = strings.Contains(strings.ToLower(ct), "unsigned")
		m[c.Name] = c
	}
	return m
}

// canonSource turns the text protocol's bytes into canonical text: numbers
// normalised through big.Rat (so 4.99 and "4.99" agree), binary and spatial
// values hex-encoded, everything else verbatim.
func canonSource(c srcColumn, b []byte) string {
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year", "decimal", "float", "double", "bit":
		if c.DataType == "bit" {
			n := new(big.Int).SetBytes(b)
			return n.String()
		}
		return canonNumber(string(b))
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		return "hex:" + fmt.Sprintf("%x", b)
	}
	return string(b)
}

func canonNumber(s string) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "num:" + s
	}
	return "num:" + r.RatString()
}

// canonJSON turns a value read over HTTP into the same canonical text,
// guided by the source column's type (the e2e test knows the source schema;
// it does not trust the dataset's).
func canonJSON(c srcColumn, v json.RawMessage) (string, error) {
	if string(v) == "null" {
		return nullMark, nil
	}
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year", "decimal", "float", "double", "bit":
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			return canonNumber(s), nil
		}
		var n json.Number
		dec := json.NewDecoder(strings.NewReader(string(v)))
		dec.UseNumber()
		if err := dec.Decode(&n); err != nil {
			var bl bool
			if json.Unmarshal(v, &bl) == nil {
				return canonNumber(map[bool]string{true: "1", false: "0"}[bl]), nil
			}
			return "", fmt.Errorf("column %s: %s is not a number", c.Name, v)
		}
		return canonNumber(n.String()), nil
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("column %s: %s is not a base64 string", c.Name, v)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", c.Name, err)
		}
		return "hex:" + fmt.Sprintf("%x", b), nil
	case "json":
		return string(v), nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		// A number or bool for a text type still compares by its text.
		return string(v), nil
	}
	return s, nil
}

func keyOf(r canonRow, key []string) string {
	parts := make([]string, len(key))
	for i, k := range key {
		parts[i] = r[k]
	}
	return strings.Join(parts, "/")
}

// checksum is an order-independent checksum of canonical rows: the sum mod
// 2^64 of the FNV-1a hash of each row's columns in name order. It is the
// test's own, computed the same way from source rows and from HTTP rows.
func checksum(rows map[string]canonRow) uint64 {
	var sum uint64
	for _, r := range rows {
		names := make([]string, 0, len(r))
		for n := range r {
			names = append(names, n)
		}
		sort.Strings(names)
		h := fnv.New64a()
		for _, n := range names {
			h.Write([]byte(n))
			h.Write([]byte{0})
			h.Write([]byte(r[n]))
			h.Write([]byte{0})
		}
		sum += h.Sum64()
	}
	return sum
}

var _ = context.Background
var _ = strconv.Itoa
