package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/snapstore/snapstore/internal/testenv"
)

// postgresEnv is the test PostgreSQL with the fixtures' helpers.
type postgresEnv struct {
	testenv.PostgresServer
}

// getPostgresEnv returns the test PostgreSQL or skips (testenv.Postgres).
func getPostgresEnv(t testing.TB) postgresEnv {
	t.Helper()
	return postgresEnv{testenv.Postgres(t)}
}

// connect opens a pgx connection to db for fixtures and checks.
func (e postgresEnv) connect(t testing.TB, db string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%s sslmode=disable", e.Host, e.Port))
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Password, cfg.Database = e.User, e.Password, db
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (e postgresEnv) exec(t testing.TB, c *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// postgresSpec reads what the tests know of a PostgreSQL table: its
// columns, each by the family its values are served as (srcColumn), and its
// primary key.
func postgresSpec(t testing.TB, c *pgx.Conn, schema, table string) tableSpec {
	t.Helper()
	ctx := context.Background()
	rel := `"` + schema + `"."` + table + `"`
	s := tableSpec{Schema: schema, Name: table, Cols: map[string]srcColumn{}}
	rows, err := c.Query(ctx, `SELECT a.attname, COALESCE(bt.typname, t.typname)::text, COALESCE(bt.typcategory, t.typcategory)::text
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_type bt ON t.typtype = 'd' AND bt.oid = t.typbasetype
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`, rel)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, typ, cat string
		if err := rows.Scan(&name, &typ, &cat); err != nil {
			t.Fatal(err)
		}
		fam := "text"
		switch {
		case cat == "A":
			fam = "array"
		case typ == "json", typ == "jsonb":
			fam = "json"
		case typ == "int2", typ == "int4", typ == "int8", typ == "oid":
			fam = "int"
		case typ == "float4", typ == "float8":
			fam = "double"
		case typ == "numeric", typ == "money":
			fam = "decimal"
		case typ == "bool", typ == "bytea", typ == "timestamptz":
			fam = typ
		}
		s.Cols[name] = srcColumn{Name: name, DataType: fam}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = c.Query(ctx, `SELECT a.attname FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(n, o)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY k.o`, rel)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		s.Key = append(s.Key, k)
	}
	rows.Close()
	if len(s.Key) == 0 || len(s.Cols) == 0 {
		t.Fatalf("%s: no primary key or no columns", rel)
	}
	return s
}

// postgresTable reads and canonicalises a whole PostgreSQL table as the
// server writes each value's text (its output function, in text format) in
// a session like snapstore's (UTC, ISO dates, shortest exact floats),
// arrays as their to_json, money as numeric.
func postgresTable(t testing.TB, c *pgx.Conn, s tableSpec) map[string]canonRow {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Exec(ctx, "SELECT set_config('TimeZone', 'UTC', false), set_config('DateStyle', 'ISO, YMD', false), set_config('IntervalStyle', 'iso_8601', false), set_config('extra_float_digits', '1', false)"); err != nil {
		t.Fatal(err)
	}
	var names, sel []string
	for n, col := range s.Cols {
		// The column itself, in text format: the type's output function
		// (a cast to text would trim char(n) and spell booleans out).
		q := `"` + n + `"`
		expr := q
		if col.DataType == "json" || col.DataType == "array" {
			expr = "to_json(" + q + ")"
		} else if col.DataType == "decimal" {
			expr = q + "::numeric"
		}
		names, sel = append(names, n), append(sel, expr)
	}
	rows, err := c.Query(ctx, "SELECT "+strings.Join(sel, ", ")+` FROM "`+s.Schema+`"."`+s.Name+`"`, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]canonRow{}
	for rows.Next() {
		raw := rows.RawValues()
		r := canonRow{}
		for i, n := range names {
			if raw[i] == nil {
				r[n] = nullMark
				continue
			}
			r[n] = canonSource(s.Cols[n], raw[i])
		}
		out[keyOf(r, s.Key)] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pagilaTables are the base tables of the Pagila-shaped sample.
var pagilaTables = []string{
	"actor", "address", "category", "city", "country", "customer", "film", "film_actor",
	"film_category", "inventory", "language", "payment", "rental", "staff", "store",
}

// pagilaChanges change the Pagila database between the two runs of
// TestPagila: a jsonb column added with the document null, SQL NULL and a
// document, inserts, updates of an enum and an array, a key column, bytes,
// deletes in a partitioned table and of a composite key.
var pagilaChanges = []string{
	"ALTER TABLE customer ADD COLUMN prefs jsonb",
	`UPDATE customer SET prefs = 'null' WHERE customer_id = 1`,
	`UPDATE customer SET prefs = '{"lang": "fr", "n": 1.10}' WHERE customer_id = 2`,
	"INSERT INTO actor (first_name, last_name) VALUES ('ÉMILE', 'ZOLA ☃')",
	"UPDATE film SET rating = 'NC-17', special_features = ARRAY['Trailers', NULL] WHERE film_id = 1",
	"UPDATE language SET language_id = 60 WHERE language_id = 6",
	`UPDATE staff SET picture = '\x00ff10fe80', active = false WHERE staff_id = 2`,
	"DELETE FROM payment WHERE payment_id IN (1, 2, 16049)",
	"UPDATE payment SET amount = 123.45 WHERE payment_id = 8",
	"DELETE FROM film_actor WHERE film_id = 7",
}

// TestPagila is TestSakila's suite on PostgreSQL: it loads the
// Pagila-shaped sample (testdata/pagila.sql) into a fresh database, pulls
// its 15 tables through a postgres data connection of the built binary,
// checks every dataset against its source table (JSON pages, NDJSON, point
// reads, checksums), changes the source, runs again, and checks the new
// versions, the diffs and reads of the first versions (checkRun1,
// checkRun2), then the served forms PostgreSQL adds.
func TestPagila(t *testing.T) {
	t.Parallel()
	e := getPostgresEnv(t)
	db := fmt.Sprintf("e2e_pagila_%d", os.Getpid())
	admin := e.connect(t, "postgres")
	e.exec(t, admin, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)", "CREATE DATABASE "+db)
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	sample, err := os.ReadFile("testdata/pagila.sql")
	if err != nil {
		t.Fatal(err)
	}
	src := e.connect(t, db)
	e.exec(t, src, string(sample))
	specs := map[string]tableSpec{}
	before := map[string]map[string]canonRow{}
	for _, tb := range pagilaTables {
		specs[tb] = postgresSpec(t, src, "public", tb)
		before[tb] = postgresTable(t, src, specs[tb])
	}

	p := startServer(t, e.Password)
	conn := map[string]any{"name": "pagila", "type": "postgres", "options": map[string]any{
		"host": e.Host, "port": atoi(t, e.Port), "user": e.User, "password": "env:" + pwEnv, "database": db, "sslmode": "disable"}}
	var got struct {
		Options map[string]any `json:"options"`
	}
	p.jsonCall(t, http.StatusCreated, "POST", "/v1/connections", conn, &got)
	if got.Options["password"] != "env:"+pwEnv {
		t.Errorf("connection shows password option %v, want the reference", got.Options["password"])
	}
	var res struct {
		OK            bool   `json:"ok"`
		ServerVersion string `json:"server_version"`
		Message       string `json:"message"`
	}
	p.jsonCall(t, http.StatusOK, "POST", "/v1/connections/pagila/test", nil, &res)
	if !res.OK || !strings.HasPrefix(res.ServerVersion, "PostgreSQL ") {
		t.Fatalf("connection test: %+v", res)
	}
	for _, tb := range pagilaTables {
		p.createAdapter(t, map[string]any{"name": tb, "connection": "pagila", "resource": tb})
	}
	v1 := checkRun1(t, p, pagilaTables, specs, before)

	// Served forms: a point read and a CSV scan.
	var film struct {
		Row map[string]json.RawMessage `json:"row"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/datasets/film/rows/2", nil, &film)
	for col, want := range map[string]string{
		"special_features": `["Commentaries",null]`, "rating": `"PG-13"`, "release_year": `2006`,
		"rental_rate": `"4.99"`, "last_update": `"2022-02-15 10:03:42+00"`, "fulltext": `"'2':2 'film':1 'story':3"`,
		"original_language_id": `null`,
	} {
		if got := string(film.Row[col]); got != want {
			t.Errorf("film 2 %s: %s, want %s", col, got, want)
		}
	}
	r := p.mustCall(t, http.StatusOK, "GET", "/v1/datasets/payment/rows", nil, "Accept", "text/csv")
	if lines := bytes.Count(r.body, []byte("\n")); lines != 16049+1 || !bytes.HasPrefix(r.body, []byte("payment_id,customer_id,staff_id,rental_id,amount,payment_date\n")) {
		t.Errorf("payment CSV: %d lines, starts %q", lines, r.body[:min(len(r.body), 120)])
	}

	// Change the source, run 2.
	e.exec(t, src, pagilaChanges...)
	after := map[string]map[string]canonRow{}
	specs2 := map[string]tableSpec{}
	for _, tb := range pagilaTables {
		specs2[tb] = postgresSpec(t, src, "public", tb)
		after[tb] = postgresTable(t, src, specs2[tb])
	}
	_, changed := checkRun2(t, p, pagilaTables, specs2, before, after, v1)
	if got, want := strings.Join(changed, " "), "actor customer film film_actor language payment staff"; got != want {
		t.Errorf("fixture: the source changed tables %s, want %s", got, want)
	}
	// The document null, SQL NULL and a document, apart in the diff and in
	// CSV.
	prefs := map[string]string{}
	for _, l := range p.readDiff(t, "customer", v1["customer"], p.dataset(t, "customer").CurrentVersion) {
		prefs[string(l.Key[0])] = string(l.After["prefs"])
	}
	if prefs["1"] != `"null"` || prefs["2"] != `"{\"n\": 1.10, \"lang\": \"fr\"}"` || prefs["3"] != "null" {
		t.Errorf("customer prefs after: 1 %s, 2 %s, 3 %s", prefs["1"], prefs["2"], prefs["3"])
	}
	r = p.mustCall(t, http.StatusOK, "GET", "/v1/datasets/customer/rows?end=3", nil, "Accept", "text/csv")
	if !bytes.Contains(r.body, []byte(`,null`+"\n")) || !bytes.Contains(r.body, []byte(`"{""n"": 1.10, ""lang"": ""fr""}"`)) {
		t.Errorf("customer CSV: %s", r.body)
	}
}
