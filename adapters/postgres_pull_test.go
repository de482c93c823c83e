package adapters

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

var pagilaTables = []string{
	"actor", "address", "category", "city", "country", "customer", "film", "film_actor",
	"film_category", "inventory", "language", "payment", "rental", "staff", "store",
}

// TestPagilaPull snapshots the 15 tables of the Pagila-shaped sample
// (tests/e2e/testdata/pagila.sql) and checks counts, a re-run that writes
// nothing, and the enum, domain, array, tsvector, numeric, timestamptz and
// bytea values against the server's own text.
func TestPagilaPull(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "pagila", "pagila", map[string]any{"chunk_rows": 2000})); err != nil {
		t.Fatal(noteErr(err))
	}
	for _, tb := range pagilaTables {
		if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: tb, Connection: "pagila", Resource: tb}); err != nil {
			t.Fatal(noteErr(err))
		}
	}
	counts := e.queryStrings(t, "pagila", `SELECT relname, (xpath('/row/c/text()', query_to_xml('SELECT count(*) AS c FROM ' || quote_ident(relname), false, true, '')))[1]::text
		FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition`)
	if len(counts) != 15 {
		t.Fatalf("pagila has %d tables: %v", len(counts), counts)
	}
	for _, tb := range pagilaTables {
		rec := ts.runWait(t, tb)
		mustSucceed(t, rec)
		vi, rows := readAll(t, ts.db, tb)
		if n := counts[tb]; len(rows) == 0 || strings.TrimSpace(n) != strconv.Itoa(len(rows)) || rec.RowsRead != int64(len(rows)) || vi.Source.Resource != "public."+tb {
			t.Errorf("%s: source %s rows, snapshot %d, read %d, resource %s", tb, n, len(rows), rec.RowsRead, vi.Source.Resource)
		}
	}
	_, film := readAll(t, ts.db, "film")
	compareColumn(t, film, "rating", e.queryStrings(t, "pagila", "SELECT film_id::text, rating::text FROM film"))
	compareColumn(t, film, "fulltext", e.queryStrings(t, "pagila", "SELECT film_id::text, fulltext::text FROM film"))
	compareColumn(t, film, "special_features", e.queryStrings(t, "pagila", "SELECT film_id::text, to_json(special_features)::text FROM film"))
	compareColumn(t, film, "rental_rate", e.queryStrings(t, "pagila", "SELECT film_id::text, rental_rate::text FROM film"))
	if v := col(film["int 2"], "special_features"); v.Kind != snapshot.KindArray || string(v.Bytes) != `["Commentaries",null]` {
		t.Errorf("film 2 special_features %s", fmtValue(v))
	}
	if v := col(film["int 1"], "release_year"); v.Kind != snapshot.KindInt || v.Int != 2006 {
		t.Errorf("film 1 release_year (a domain) %s", fmtValue(v))
	}
	vi, payment := readAll(t, ts.db, "payment")
	if strings.Join(vi.Schema.Key, ",") != "payment_date,payment_id" {
		t.Errorf("payment key %v", vi.Schema.Key)
	}
	if len(payment) != 16049 {
		t.Errorf("payment (partitioned) %d rows", len(payment))
	}
	_, staff := readAll(t, ts.db, "staff")
	compareColumn(t, staff, "picture", e.queryStrings(t, "pagila", "SELECT staff_id::text, upper(encode(picture, 'hex')) FROM staff"))
	_, rental := readAll(t, ts.db, "rental")
	compareColumn(t, rental, "return_date", e.queryStrings(t, "pagila", "SELECT rental_id::text, (return_date AT TIME ZONE 'UTC')::text || '+00' FROM rental"))
	// A re-run with nothing changed writes no row.
	rec := ts.runWait(t, "rental")
	mustSucceed(t, rec)
	if rec.Stats.Inserted+rec.Stats.Updated+rec.Stats.Deleted != 0 || rec.Stats.Unchanged != rec.RowsRead {
		t.Errorf("unchanged re-run stats %+v", rec.Stats)
	}
	// The view needs key_columns; resources list tables with their keys.
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "cl", Connection: "pagila", Resource: "customer_list"}); !errors.Is(err, ErrNoKey) {
		t.Errorf("view without key_columns: %v", err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "cl", Connection: "pagila", Resource: "customer_list", KeyColumns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, ts.runWait(t, "cl"))
	res, err := ts.svc.Resources(ctx, "pagila")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res {
		got[r.Schema+"."+r.Name] = r.Type + " " + strings.Join(r.Key, ",")
	}
	if got["public.payment"] != "table payment_date,payment_id" || got["public.customer_list"] != "view " || got["public.film_actor"] != "table actor_id,film_id" || len(res) != 16 {
		t.Errorf("resources %v", got)
	}
}

// TestPostgresKeysetPaging pages awkward keys in chunks of 2 rows: enum
// order, bytea, numeric, a collation other than the byte order,
// timestamptz, mixed-case and quoted names, a unique index chosen over a
// nullable one.
func TestPostgresKeysetPaging(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "keys")
	e.exec(t, db,
		"CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
		`CREATE TABLE "Select" ("from" bytea NOT NULL, "Mixed.Case""x" numeric(30,10) NOT NULL, v int, PRIMARY KEY ("from", "Mixed.Case""x"))`,
		`INSERT INTO "Select" VALUES ('\x00', 12345678901234567890.0000000001, 1), ('\x00', -1, 2), ('\x00', 0, 3), ('\xff80', 5, 4), ('\xc328', 7, 5), ('', 0, 6), ('\xff', 0, 7)`,
		"CREATE TABLE enum_key (m mood PRIMARY KEY, v int)",
		"INSERT INTO enum_key VALUES ('happy', 1), ('sad', 2), ('ok', 3)",
		`CREATE TABLE coll_key (s text COLLATE "en-x-icu" PRIMARY KEY)`,
		"INSERT INTO coll_key VALUES ('a'), ('B'), ('c'), ('D'), ('é'), ('f'), ('E')",
		"CREATE TABLE ts_key (at timestamptz PRIMARY KEY, v int)",
		"INSERT INTO ts_key VALUES ('2026-01-01 00:00:00.5+00', 1), ('2026-01-01 01:00:00+05', 2), ('-infinity', 3), ('infinity', 4), ('2025-12-31 23:59:59.999999+00', 5)",
		"CREATE TABLE uk (id int NULL UNIQUE, code varchar(5) NOT NULL UNIQUE, c2 int NOT NULL, UNIQUE (code, c2))",
		"INSERT INTO uk VALUES (NULL, 'a', 1), (2, 'b', 1), (3, 'c', 1)",
		`CREATE SCHEMA "my.schema"`,
		`CREATE TABLE "my.schema"."t" (id int PRIMARY KEY)`,
		`INSERT INTO "my.schema"."t" VALUES (1), (2), (3)`,
		"CREATE TABLE bool_key (b boolean, i int, PRIMARY KEY (b, i))",
		"INSERT INTO bool_key VALUES (true, 2), (false, 9), (true, 1), (false, 3), (true, 0)",
		`CREATE TABLE "q""uote.d" (id int PRIMARY KEY)`,
		`INSERT INTO "q""uote.d" VALUES (1), (2), (3)`,
	)
	src := openEnvSource(t, e, db, map[string]any{"chunk_rows": 2})
	read := func(req TableRequest) ([]string, snapshot.Schema, error) {
		tr, err := src.OpenTable(ctx, req)
		if err != nil {
			return nil, snapshot.Schema{}, noteErr(err)
		}
		defer tr.Close()
		var out []string
		for tr.Next(ctx) {
			out = append(out, stringsOf(tr.Values()))
		}
		return out, tr.Schema(), noteErr(tr.Err())
	}
	rows, sch, err := read(TableRequest{Resource: "Select"})
	wantOrder := []string{
		`kind 6 hex , kind 4 "0.0000000000" (nil=false), int 6`,
		`kind 6 hex 00, kind 4 "-1.0000000000" (nil=false), int 2`,
		`kind 6 hex 00, kind 4 "0.0000000000" (nil=false), int 3`,
		`kind 6 hex 00, kind 4 "12345678901234567890.0000000001" (nil=false), int 1`,
		`kind 6 hex c328, kind 4 "7.0000000000" (nil=false), int 5`,
		`kind 6 hex ff, kind 4 "0.0000000000" (nil=false), int 7`,
		`kind 6 hex ff80, kind 4 "5.0000000000" (nil=false), int 4`,
	}
	if err != nil || strings.Join(rows, "\n") != strings.Join(wantOrder, "\n") || strings.Join(sch.Key, ",") != `from,Mixed.Case"x` {
		t.Errorf("Select: %v\n%s\nkey %v", err, strings.Join(rows, "\n"), sch.Key)
	}
	// P2: 7 rows in chunks of 2 are 4 queries.
	tr, err := src.OpenTable(ctx, TableRequest{Resource: "Select"})
	if err != nil {
		t.Fatal(err)
	}
	for tr.Next(ctx) {
	}
	if queries, next := chunkQueries(tr); queries != 4 || !strings.HasSuffix(next, "LIMIT 2") {
		t.Errorf("chunk queries %d (want 4), query %s", queries, next)
	}
	tr.Close()
	if rows, _, err := read(TableRequest{Resource: "enum_key"}); err != nil || len(rows) != 3 || !strings.Contains(rows[0], `"sad"`) || !strings.Contains(rows[2], `"happy"`) {
		t.Errorf("enum_key %v %v", rows, err)
	}
	if rows, _, err := read(TableRequest{Resource: "coll_key"}); err != nil || len(rows) != 7 {
		t.Errorf("coll_key %v %v", rows, err)
	}
	if rows, _, err := read(TableRequest{Resource: "ts_key"}); err != nil || len(rows) != 5 || !strings.Contains(rows[0], "-infinity") || !strings.Contains(rows[1], "2025-12-31 20:00:00") {
		t.Errorf("ts_key %v %v", rows, err)
	}
	// A boolean key (its text t/f cast back) pages in PostgreSQL's order,
	// false first.
	if rows, _, err := read(TableRequest{Resource: "bool_key"}); err != nil || len(rows) != 5 ||
		!strings.HasPrefix(rows[0], `kind 13 "f"`) || !strings.HasSuffix(rows[1], "int 9") || !strings.HasPrefix(rows[4], `kind 13 "t"`) || !strings.HasSuffix(rows[4], "int 2") {
		t.Errorf("bool_key %q %v", rows, err)
	}
	if _, sch, err := read(TableRequest{Resource: "uk"}); err != nil || strings.Join(sch.Key, ",") != "code" {
		t.Errorf("uk key %v %v", sch.Key, err)
	}
	// Quoted, or as resources list a name (a quote character in it too).
	for _, name := range []string{`"my.schema"."t"`, `my.schema.t`, `q"uote.d`, `public.q"uote.d`} {
		if rows, _, err := read(TableRequest{Resource: name}); err != nil || len(rows) != 3 {
			t.Errorf("%s: %v %v", name, rows, err)
		}
	}
	if _, _, err := read(TableRequest{Resource: "nosuch"}); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("nosuch: %v", err)
	}
	if _, _, err := read(TableRequest{Resource: "pg_catalog.pg_class"}); !errors.Is(err, ErrNoKey) && !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("pg_class: %v", err)
	}
}

// TestPostgresSharedSnapshot: a second reader given the first's exported
// snapshot sees the table as the first does, not a row committed between
// them, while a reader without it does (P1).
func TestPostgresSharedSnapshot(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "snap")
	e.exec(t, db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t SELECT generate_series(1, 10)")
	src := openEnvSource(t, e, db, map[string]any{"chunk_rows": 3})
	first, err := src.OpenTable(ctx, TableRequest{Resource: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	token, err := first.(SnapshotSharer).ExportSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.exec(t, db, "INSERT INTO t VALUES (11), (12)", "DELETE FROM t WHERE id = 1")
	count := func(tr TableReader) int {
		n := 0
		for tr.Next(ctx) {
			n++
		}
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	second, err := src.OpenTable(ctx, TableRequest{Resource: "t", Snapshot: token})
	if err != nil {
		t.Fatal(noteErr(err))
	}
	defer second.Close()
	fresh, err := src.OpenTable(ctx, TableRequest{Resource: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if a, b, c := count(first), count(second), count(fresh); a != 10 || b != 10 || c != 11 {
		t.Fatalf("rows: first %d, second in its snapshot %d, fresh %d", a, b, c)
	}
	if _, err := src.OpenTable(ctx, TableRequest{Resource: "t", Snapshot: "x'; DROP TABLE t; --"}); err == nil {
		t.Fatal("a malformed snapshot id was accepted")
	}
}

// TestPostgresFormsUpgrade: a dataset stored by an earlier build, with
// booleans as 1/0, timestamptz without its +00 and arrays as JSON text,
// shows each such row updated once by the next run, the changed columns
// named, and nothing by the run after (docs/types.md, CHANGELOG.md).
func TestPostgresFormsUpgrade(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "upgrade")
	e.exec(t, db, "CREATE TABLE forms (id int PRIMARY KEY, b boolean, at timestamptz, a int[], n text)",
		"INSERT INTO forms VALUES (1, true, '2026-06-01 07:00:00+00', '{1,2}', 'x'), (2, false, NULL, NULL, 'y'), (3, NULL, NULL, NULL, 'z')")
	ts := newStack(t, Options{})
	// The version an earlier build wrote.
	old := snapshot.Schema{Key: []string{"id"}, Columns: []snapshot.Column{
		{Name: "id", Kind: snapshot.KindInt, SourceType: "integer"},
		{Name: "b", Kind: snapshot.KindInt, SourceType: "boolean", Nullable: true},
		{Name: "at", Kind: snapshot.KindDateTime, SourceType: "timestamp with time zone", Nullable: true},
		{Name: "a", Kind: snapshot.KindJSON, SourceType: "integer[]", Nullable: true},
		{Name: "n", Kind: snapshot.KindString, SourceType: "text", Nullable: true},
	}}
	run, err := ts.db.BeginRun(ctx, snapshot.DatasetConfig{Name: "forms"}, snapshot.RunOptions{Schema: old})
	if err != nil {
		t.Fatal(err)
	}
	text := func(k snapshot.Kind, s string) snapshot.Value { return snapshot.Value{Kind: k, Bytes: []byte(s)} }
	for _, row := range [][]snapshot.Value{
		{{Kind: snapshot.KindInt, Int: 1}, {Kind: snapshot.KindInt, Int: 1}, text(snapshot.KindDateTime, "2026-06-01 07:00:00"), text(snapshot.KindJSON, "[1,2]"), text(snapshot.KindString, "x")},
		{{Kind: snapshot.KindInt, Int: 2}, {Kind: snapshot.KindInt, Int: 0}, {}, {}, text(snapshot.KindString, "y")},
		{{Kind: snapshot.KindInt, Int: 3}, {}, {}, {}, text(snapshot.KindString, "z")},
	} {
		if err := run.Put(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	v1, err := run.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "pg", db, nil)); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "forms", Connection: "pg", Resource: "forms"}); err != nil {
		t.Fatal(noteErr(err))
	}
	rec := ts.runWait(t, "forms")
	mustSucceed(t, rec)
	// Rows 1 and 2 hold a value in a new form; row 3 only NULLs.
	if rec.Stats.Updated != 2 || rec.Stats.Unchanged != 1 || rec.Stats.Inserted+rec.Stats.Deleted != 0 {
		t.Errorf("first run after the upgrade: %+v", rec.Stats)
	}
	d, err := ts.db.Diff(ctx, "forms", v1.Version, rec.Version)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	changed := map[string]string{}
	for d.Next() {
		ch := d.Change()
		changed[keyText(ch.Key[0])] = strings.Join(ch.Changed, ",")
	}
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	if changed["1"] != "b,at,a" || changed["2"] != "b" || len(changed) != 2 {
		t.Errorf("changed columns %v", changed)
	}
	rec = ts.runWait(t, "forms")
	mustSucceed(t, rec)
	if rec.Stats.Inserted+rec.Stats.Updated+rec.Stats.Deleted != 0 {
		t.Errorf("second run after the upgrade: %+v", rec.Stats)
	}
}
