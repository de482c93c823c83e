package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresEnv is the PostgreSQL of scripts/postgres.sh.
type postgresEnv struct {
	Host, Port, User, Password string
}

func getPostgresEnv(t testing.TB) postgresEnv {
	t.Helper()
	e := postgresEnv{
		Host:     os.Getenv("SNAPSTORE_TEST_POSTGRES_HOST"),
		Port:     os.Getenv("SNAPSTORE_TEST_POSTGRES_PORT"),
		User:     os.Getenv("SNAPSTORE_TEST_POSTGRES_USER"),
		Password: os.Getenv("SNAPSTORE_TEST_POSTGRES_PASSWORD"),
	}
	if e.Host == "" || e.Port == "" {
		t.Skip("SNAPSTORE_TEST_POSTGRES_* unset: run through `make test` (scripts/postgres.sh starts PostgreSQL)")
	}
	return e
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

// pagilaTables are the base tables of the Pagila-shaped sample.
var pagilaTables = []string{
	"actor", "address", "category", "city", "country", "customer", "film", "film_actor",
	"film_category", "inventory", "language", "payment", "rental", "staff", "store",
}

// TestPagila loads the Pagila-shaped sample (testdata/pagila.sql) into a
// fresh database, pulls its 15 tables through a postgres data connection
// of the built binary, checks counts and served forms (JSON pages, CSV,
// point reads), changes the source (a jsonb column added, its document
// null and SQL NULL, inserts, updates, deletes in a partitioned table),
// runs again and checks the diffs.
func TestPagila(t *testing.T) {
	t.Parallel()
	e := getPostgresEnv(t)
	ctx := context.Background()
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

	p := startServer(t, e.Password)
	conn := map[string]any{"name": "pagila", "type": "postgres", "options": map[string]any{
		"host": e.Host, "port": atoi(t, e.Port), "user": e.User, "password": "env:" + pwEnv, "database": db, "sslmode": "disable"}}
	p.jsonCall(t, http.StatusCreated, "POST", "/v1/connections", conn, nil)
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
	count := func(tb string) int64 {
		var n int64
		if err := src.QueryRow(ctx, "SELECT count(*) FROM "+tb).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	v1 := map[string]int64{}
	for _, tb := range pagilaTables {
		r := p.mustRun(t, tb)
		v1[tb] = r.Version
		if n := count(tb); r.RowsRead != n || r.Stats.Inserted != n {
			t.Errorf("run 1 of %s: rows_read %d inserted %d, source %d", tb, r.RowsRead, r.Stats.Inserted, n)
		}
	}
	// Served forms: a point read, a JSON page and a CSV scan.
	var film struct {
		Row map[string]json.RawMessage `json:"row"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/datasets/film/rows/2", nil, &film)
	for col, want := range map[string]string{
		"special_features": `"[\"Commentaries\",null]"`, "rating": `"PG-13"`, "release_year": `2006`,
		"rental_rate": `"4.99"`, "last_update": `"2022-02-15 10:03:42"`, "fulltext": `"'2':2 'film':1 'story':3"`,
		"original_language_id": `null`,
	} {
		if got := string(film.Row[col]); got != want {
			t.Errorf("film 2 %s: %s, want %s", col, got, want)
		}
	}
	r := p.mustCall(t, http.StatusOK, "GET", "/v1/datasets/payment/rows", nil, "Accept", "text/csv")
	lines := bytes.Count(r.body, []byte("\n"))
	if lines != 16049+1 || !bytes.HasPrefix(r.body, []byte("payment_id,customer_id,staff_id,rental_id,amount,payment_date\n")) {
		t.Errorf("payment CSV: %d lines, starts %q", lines, r.body[:min(len(r.body), 120)])
	}

	// Change the source, run 2.
	e.exec(t, src,
		"ALTER TABLE customer ADD COLUMN prefs jsonb",
		`UPDATE customer SET prefs = 'null' WHERE customer_id = 1`,
		`UPDATE customer SET prefs = '{"lang": "fr", "n": 1.10}' WHERE customer_id = 2`,
		"INSERT INTO actor (first_name, last_name) VALUES ('ÉMILE', 'ZOLA ☃')",
		"UPDATE film SET rating = 'NC-17', special_features = ARRAY['Trailers'] WHERE film_id = 1",
		"DELETE FROM payment WHERE payment_id IN (1, 2, 16049)",
		"DELETE FROM film_actor WHERE film_id = 7",
	)
	want := map[string]string{
		"actor": "1 0 0", "film": "0 1 0", "payment": "0 0 3", "customer": "0 599 0",
		"film_actor": fmt.Sprintf("0 0 %d", 5),
	}
	for _, tb := range pagilaTables {
		r := p.mustRun(t, tb)
		lines := p.readDiff(t, tb, v1[tb], r.Version)
		var ins, upd, del int
		for _, l := range lines {
			switch l.Op {
			case "insert":
				ins++
			case "update":
				upd++
			case "delete":
				del++
			}
		}
		w, ok := want[tb]
		if !ok {
			w = "0 0 0"
		}
		if got := fmt.Sprintf("%d %d %d", ins, upd, del); got != w || r.Stats.Inserted != int64(ins) || r.Stats.Updated != int64(upd) || r.Stats.Deleted != int64(del) {
			t.Errorf("%s diff (inserts updates deletes) %s, want %s; stats %+v", tb, got, w, r.Stats)
		}
		if tb == "customer" {
			prefs := map[string]string{}
			for _, l := range lines {
				prefs[string(l.Key[0])] = string(l.After["prefs"])
			}
			if prefs["1"] != `"null"` || prefs["2"] != `"{\"n\": 1.10, \"lang\": \"fr\"}"` || prefs["3"] != "null" {
				t.Errorf("customer prefs after: 1 %s, 2 %s, 3 %s", prefs["1"], prefs["2"], prefs["3"])
			}
		}
	}
	// The NDJSON scan of the new version matches the source's counts.
	for _, tb := range []string{"payment", "actor", "film_actor"} {
		r := p.mustCall(t, http.StatusOK, "GET", "/v1/datasets/"+tb+"/rows", nil, "Accept", "application/x-ndjson")
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		n := 0
		for sc.Scan() {
			n++
		}
		if int64(n) != count(tb) {
			t.Errorf("%s NDJSON: %d rows, source %d", tb, n, count(tb))
		}
	}
}
