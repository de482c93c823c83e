package e2e

import (
	"bytes"
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
	"github.com/snapstore/snapstore/internal/testenv"
)

// mysqlEnv is the test MariaDB with the fixtures' helpers.
type mysqlEnv struct {
	testenv.MySQLServer
}

// getMySQLEnv returns the test MariaDB or skips (testenv.MySQL).
func getMySQLEnv(t testing.TB) mysqlEnv {
	t.Helper()
	return mysqlEnv{testenv.MySQL(t)}
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
	Name string
	// DataType is information_schema.COLUMNS.DATA_TYPE, lower case (MySQL),
	// or a family of PostgreSQL types spelled as the MySQL type that is
	// served alike ("int", "double", "decimal", "json", "text"), or one of
	// PostgreSQL's own: "bool", "bytea", "timestamptz", "array"
	// (postgresSpec).
	DataType string
	Unsigned bool
}

// canonRow is a row in canonical form: column name -> canonical text, with
// NULL as nullMark.
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
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// MariaDB's JSON is LONGTEXT with CHECK (json_valid(col)).
	cks, err := db.Query(`SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?`, schema, table)
	if err != nil {
		t.Fatal(err)
	}
	defer cks.Close()
	for cks.Next() {
		var clause string
		if err := cks.Scan(&clause); err != nil {
			t.Fatal(err)
		}
		for n, c := range m {
			if strings.EqualFold(strings.ReplaceAll(clause, " ", ""), "json_valid(`"+n+"`)") {
				c.DataType = "json"
				m[n] = c
			}
		}
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
			return "num:" + new(big.Int).SetBytes(b).String()
		}
		return canonNumber(string(b))
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		return "hex:" + fmt.Sprintf("%x", b)
	case "json":
		return canonJSONDoc(b)
	case "array": // to_json of the array, which is the served form of text arrays
		return canonJSONDoc(b)
	case "bool": // PostgreSQL's t and f, served as true and false
		return map[string]string{"t": "bool:true", "f": "bool:false"}[string(b)]
	case "bytea": // PostgreSQL's \x hex text
		return "hex:" + strings.TrimPrefix(string(b), `\x`)
	}
	return string(b)
}

// canonJSONDoc is a JSON document without insignificant whitespace (the
// server may keep it as written); not JSON stays as is, marked.
func canonJSONDoc(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return "badjson:" + string(b)
	}
	return "json:" + buf.String()
}

func canonNumber(s string) string {
	if plainInt(s) {
		return "num:" + s // what RatString gives, without the parse
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "num:" + s
	}
	return "num:" + r.RatString()
}

// canonJSON turns a value read over HTTP into the same canonical text,
// guided by the source column's type (the e2e test knows the source schema;
// it does not trust the dataset's). It holds the JSON forms of
// docs/types.md: DECIMAL is a string; other numbers are JSON numbers, and a
// string only beyond 2^53; bytes are base64 strings; JSON is its text in a
// string; text is a string.
func canonJSON(c srcColumn, v json.RawMessage) (string, error) {
	if string(v) == "null" {
		return nullMark, nil
	}
	switch c.DataType {
	case "decimal":
		s, ok := jsonString(v)
		if !ok {
			return "", fmt.Errorf("column %s (decimal): %s is not a JSON string", c.Name, v)
		}
		return canonNumber(s), nil
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year", "float", "double", "bit":
		if s, ok := jsonString(v); ok {
			r, ok := new(big.Rat).SetString(s)
			if !ok || r.Cmp(new(big.Rat).SetInt64(1<<53)) <= 0 && r.Cmp(new(big.Rat).SetInt64(-1<<53)) >= 0 {
				return "", fmt.Errorf("column %s (%s): %s is a string, want a JSON number", c.Name, c.DataType, v)
			}
			return canonNumber(s), nil
		}
		var n json.Number
		dec := json.NewDecoder(strings.NewReader(string(v)))
		dec.UseNumber()
		if err := dec.Decode(&n); err != nil {
			return "", fmt.Errorf("column %s (%s): %s is not a number", c.Name, c.DataType, v)
		}
		return canonNumber(n.String()), nil
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection", "bytea":
		s, ok := jsonString(v)
		if !ok {
			return "", fmt.Errorf("column %s: %s is not a base64 string", c.Name, v)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", c.Name, err)
		}
		return "hex:" + fmt.Sprintf("%x", b), nil
	case "bool":
		if string(v) != "true" && string(v) != "false" {
			return "", fmt.Errorf("column %s (bool): %s is not true or false", c.Name, v)
		}
		return "bool:" + string(v), nil
	case "array":
		// The array itself, never a string holding it.
		if len(v) == 0 || v[0] != '[' && v[0] != '{' {
			return "", fmt.Errorf("column %s (array): %s is not a JSON array", c.Name, v)
		}
		return canonJSONDoc(v), nil
	case "json":
		// The document's text in a JSON string, never the document
		// itself, so the document null is "null" and SQL NULL null.
		s, ok := jsonString(v)
		if !ok {
			return "", fmt.Errorf("column %s (json): %s is not a JSON string holding the document", c.Name, v)
		}
		return canonJSONDoc([]byte(s)), nil
	}
	s, ok := jsonString(v)
	if !ok {
		return "", fmt.Errorf("column %s (%s): %s is not a JSON string", c.Name, c.DataType, v)
	}
	return s, nil
}

// plainInt reports whether s is a decimal integer in RatString's form: an
// optional minus, no leading zeros, not "-0".
func plainInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 1 && d[0] == '0' || s == "-0" {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// jsonString returns the text of a JSON string; fast for strings without
// escapes.
func jsonString(v json.RawMessage) (string, bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && !strings.ContainsRune(string(v[1:len(v)-1]), '\\') {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
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

func atoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not an integer: %q", s)
	}
	return n
}

// tableSpec is what the tests know of a source table, read from
// information_schema: its columns and primary key.
type tableSpec struct {
	Schema, Name string
	Key          []string
	Cols         map[string]srcColumn
}

func loadSpec(t testing.TB, db *sql.DB, schema, table string) tableSpec {
	t.Helper()
	s := tableSpec{Schema: schema, Name: table, Cols: sourceColumns(t, db, schema, table)}
	rows, err := db.Query(`SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION`, schema, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		s.Key = append(s.Key, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(s.Key) == 0 || len(s.Cols) == 0 {
		t.Fatalf("%s.%s: no primary key or no columns", schema, table)
	}
	return s
}

// read reads and canonicalises the whole source table.
func (s tableSpec) read(t testing.TB, db *sql.DB) map[string]canonRow {
	t.Helper()
	return sourceTable(t, db, s.Schema, s.Name, s.Key)
}

// baseTables lists the base tables of schema, sorted.
func baseTables(t testing.TB, db *sql.DB, schema string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME`, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// cloneTable copies one sakila table (structure without foreign keys, and
// rows) into a new database name, dropped at cleanup.
func (e mysqlEnv) cloneTable(t testing.TB, name, table string) *sql.DB {
	t.Helper()
	root := e.open(t, "")
	for _, q := range []string{
		"DROP DATABASE IF EXISTS `" + name + "`",
		"CREATE DATABASE `" + name + "`",
		"CREATE TABLE `" + name + "`.`" + table + "` LIKE sakila.`" + table + "`",
		"INSERT INTO `" + name + "`.`" + table + "` SELECT * FROM sakila.`" + table + "`",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { root.Exec("DROP DATABASE IF EXISTS `" + name + "`") })
	return e.open(t, name)
}

// execAll runs statements in order on one connection; each must change
// exactly the number of rows given (-1: any).
func execAll(t testing.TB, db *sql.DB, stmts []stmt) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Session settings a fixture changes must not reach later users of the
	// pooled connection (the source reads run in UTC).
	defer conn.ExecContext(ctx, "SET SESSION time_zone = '+00:00', sql_mode = DEFAULT")
	for _, s := range stmts {
		res, err := conn.ExecContext(ctx, s.q)
		if err != nil {
			t.Fatalf("%s: %v", s.q, err)
		}
		if s.rows >= 0 {
			if n, _ := res.RowsAffected(); n != s.rows {
				t.Fatalf("%s: %d rows affected, want %d (fixture out of date?)", s.q, n, s.rows)
			}
		}
	}
}

// stmt is a source change and the rows it must affect (-1: any).
type stmt struct {
	q    string
	rows int64
}
