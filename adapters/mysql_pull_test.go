package adapters

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

var sakilaTables = []string{
	"actor", "address", "category", "city", "country", "customer", "film", "film_actor",
	"film_category", "film_text", "inventory", "language", "payment", "rental", "staff", "store",
}

// sourceStrings reads query (two columns: key text, value text) from the
// source through a separate plain connection.
func sourceStrings(t *testing.T, e mysqlTestEnv, db, query string) map[string]string {
	t.Helper()
	a := e.admin(t, db)
	conn, err := a.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "SET SESSION time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k string
		var v *string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		if v == nil {
			out[k] = "NULL"
		} else {
			out[k] = *v
		}
	}
	return out
}

func keyText(v snapshot.Value) string {
	switch v.Kind {
	case snapshot.KindInt:
		return fmt.Sprint(v.Int)
	case snapshot.KindUint:
		return fmt.Sprint(v.Uint)
	}
	return string(v.Bytes)
}

func valText(v snapshot.Value) string {
	switch v.Kind {
	case snapshot.KindNull:
		return "NULL"
	case snapshot.KindInt:
		return fmt.Sprint(v.Int)
	case snapshot.KindUint:
		return fmt.Sprint(v.Uint)
	case snapshot.KindBytes, snapshot.KindGeometry:
		return strings.ToUpper(hex.EncodeToString(v.Bytes))
	}
	return string(v.Bytes)
}

// compareColumn checks that column colName of every row of dataset equals
// the source's text for it (query gives key, text).
func compareColumn(t *testing.T, rows map[string]snapshot.Row, colName string, want map[string]string) {
	t.Helper()
	if len(rows) != len(want) {
		t.Errorf("column %s: %d rows in snapshot, %d at source", colName, len(rows), len(want))
	}
	bad := 0
	for _, row := range rows {
		k := keyText(row.Key[0])
		got := valText(col(row, colName))
		if w, ok := want[k]; !ok || w != got {
			if bad++; bad <= 3 {
				t.Errorf("column %s key %s: snapshot %q, source %q", colName, k, got, w)
			}
		}
	}
}

// TestSakilaPull snapshots all 16 Sakila tables into a Pebble-backed
// snapshot.DB and checks counts and the ENUM, SET, YEAR, DECIMAL,
// TIMESTAMP and BLOB values against the source.
func TestSakilaPull(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, mysqlConnSpec(t, e, "sakila", "sakila", map[string]any{"chunk_rows": 2000})); err != nil {
		t.Fatal(noteErr(err))
	}
	for _, tb := range sakilaTables {
		if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: tb, Connection: "sakila", Resource: tb}); err != nil {
			t.Fatal(noteErr(err))
		}
	}
	counts := sourceStrings(t, e, "sakila", `SELECT TABLE_NAME, '' FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sakila' AND TABLE_TYPE = 'BASE TABLE'`)
	if len(counts) != 16 {
		t.Fatalf("sakila has %d tables", len(counts))
	}
	total := int64(0)
	for _, tb := range sakilaTables {
		rec := ts.runWait(t, tb)
		mustSucceed(t, rec)
		var n int64
		if err := e.admin(t, "sakila").QueryRow("SELECT COUNT(*) FROM " + quoteMySQLIdent(tb)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		vi, rows := readAll(t, ts.db, tb)
		if int64(len(rows)) != n || rec.RowsRead != n || rec.Stats.Inserted != n || vi.Stats.Rows != n {
			t.Errorf("%s: source %d rows, snapshot %d, read %d, inserted %d", tb, n, len(rows), rec.RowsRead, rec.Stats.Inserted)
		}
		if vi.Source.Resource != "sakila."+tb || len(vi.Schema.Columns) == 0 {
			t.Errorf("%s: version source %+v", tb, vi.Source)
		}
		total += n
	}
	t.Logf("16 tables, %d rows", total)
	_, film := readAll(t, ts.db, "film")
	compareColumn(t, film, "rating", sourceStrings(t, e, "sakila", "SELECT film_id, rating FROM film"))
	compareColumn(t, film, "special_features", sourceStrings(t, e, "sakila", "SELECT film_id, special_features FROM film"))
	compareColumn(t, film, "release_year", sourceStrings(t, e, "sakila", "SELECT film_id, CAST(release_year AS CHAR) FROM film"))
	compareColumn(t, film, "replacement_cost", sourceStrings(t, e, "sakila", "SELECT film_id, CAST(replacement_cost AS CHAR) FROM film"))
	compareColumn(t, film, "last_update", sourceStrings(t, e, "sakila", "SELECT film_id, CAST(last_update AS CHAR) FROM film"))
	if v := col(film["uint 1"], "special_features"); v.Kind != snapshot.KindString || string(v.Bytes) != "Deleted Scenes,Behind the Scenes" {
		t.Errorf("film 1 special_features %s", fmtValue(v))
	}
	if v := col(film["uint 1"], "release_year"); v.Kind != snapshot.KindInt || v.Int != 2006 {
		t.Errorf("film 1 release_year %s", fmtValue(v))
	}
	_, payment := readAll(t, ts.db, "payment")
	compareColumn(t, payment, "amount", sourceStrings(t, e, "sakila", "SELECT payment_id, CAST(amount AS CHAR) FROM payment"))
	compareColumn(t, payment, "payment_date", sourceStrings(t, e, "sakila", "SELECT payment_id, CAST(payment_date AS CHAR) FROM payment"))
	compareColumn(t, payment, "last_update", sourceStrings(t, e, "sakila", "SELECT payment_id, CAST(last_update AS CHAR) FROM payment"))
	// The DECIMAL sum, exact, against the server's.
	sum := new(big.Rat)
	for _, row := range payment {
		r, ok := new(big.Rat).SetString(string(col(row, "amount").Bytes))
		if !ok {
			t.Fatalf("amount %q", col(row, "amount").Bytes)
		}
		sum.Add(sum, r)
	}
	var srcSum string
	e.admin(t, "sakila").QueryRow("SELECT CAST(SUM(amount) AS CHAR) FROM payment").Scan(&srcSum)
	if want, _ := new(big.Rat).SetString(srcSum); sum.Cmp(want) != 0 {
		t.Errorf("sum of amounts %s, source %s", sum.FloatString(2), srcSum)
	}
	_, staff := readAll(t, ts.db, "staff")
	compareColumn(t, staff, "picture", sourceStrings(t, e, "sakila", "SELECT staff_id, HEX(picture) FROM staff"))
	if v := col(staff["uint 1"], "picture"); v.Kind != snapshot.KindBytes || len(v.Bytes) != 36365 {
		t.Errorf("staff 1 picture: kind %d, %d bytes", v.Kind, len(v.Bytes))
	}
	// A re-run with nothing changed writes no row.
	rec := ts.runWait(t, "rental")
	mustSucceed(t, rec)
	if rec.Stats.Inserted+rec.Stats.Updated+rec.Stats.Deleted != 0 || rec.Stats.Unchanged != rec.RowsRead {
		t.Errorf("unchanged re-run stats %+v", rec.Stats)
	}
}

// copySakila copies tables of sakila into a fresh database (no foreign
// keys), so tests can change the source.
func copySakila(t *testing.T, e mysqlTestEnv, tables ...string) string {
	t.Helper()
	db := e.tempDatabase(t, "copy")
	var stmts []string
	for _, tb := range tables {
		q := quoteMySQLIdent(tb)
		stmts = append(stmts, "CREATE TABLE "+q+" LIKE sakila."+q, "INSERT INTO "+q+" SELECT * FROM sakila."+q)
	}
	e.exec(t, db, stmts...)
	return db
}

// diffKeys lists the diff between two versions as "op key" strings.
func diffKeys(t *testing.T, db *snapshot.DB, dataset string, from, to int64) []string {
	t.Helper()
	it, err := db.Diff(context.Background(), dataset, from, to)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for it.Next() {
		c := it.Change()
		out = append(out, string(c.Op)+" "+keyText(c.Key[0]))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestSecondRunShowsExactlyTheChanges changes a copy of Sakila between two
// runs and checks each dataset's stats and diff.
func TestSecondRunShowsExactlyTheChanges(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	src := copySakila(t, e, "actor", "film", "payment", "address")
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, mysqlConnSpec(t, e, "copy", src, map[string]any{"chunk_rows": 500})); err != nil {
		t.Fatal(noteErr(err))
	}
	for _, tb := range []string{"actor", "film", "payment", "address"} {
		if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: tb, Connection: "copy", Resource: tb}); err != nil {
			t.Fatal(err)
		}
	}
	first := map[string]RunRecord{}
	for _, tb := range []string{"actor", "film", "payment", "address"} {
		first[tb] = ts.runWait(t, tb)
		mustSucceed(t, first[tb])
	}
	e.exec(t, src,
		"INSERT INTO actor (actor_id, first_name, last_name) VALUES (201, 'ADA', 'LOVELACE'), (202, 'ALAN', 'TURING')",
		"UPDATE film SET rating = 'NC-17', special_features = 'Trailers,Commentaries' WHERE film_id IN (1, 2, 3)",
		"DELETE FROM payment WHERE payment_id IN (5, 6, 7, 100, 16049)",
		"UPDATE payment SET amount = 123.45 WHERE payment_id = 8",
		// An added GEOMETRY column: every row changes (it appears), one gets a value.
		"ALTER TABLE address ADD COLUMN location POINT NULL",
		"UPDATE address SET location = ST_GeomFromText('POINT(-73.98 40.75)', 4326) WHERE address_id = 3",
	)
	second := map[string]RunRecord{}
	for _, tb := range []string{"actor", "film", "payment", "address"} {
		second[tb] = ts.runWait(t, tb)
		mustSucceed(t, second[tb])
	}
	check := func(tb string, want []string) {
		t.Helper()
		got := diffKeys(t, ts.db, tb, first[tb].Version, second[tb].Version)
		if strings.Join(got, ";") != strings.Join(want, ";") {
			t.Errorf("%s diff %v, want %v", tb, got, want)
		}
	}
	check("actor", []string{"insert 201", "insert 202"})
	check("film", []string{"update 1", "update 2", "update 3"})
	check("payment", []string{"delete 100", "delete 16049", "delete 5", "delete 6", "delete 7", "update 8"})
	if st := second["actor"].Stats; st.Inserted != 2 || st.Updated != 0 || st.Deleted != 0 || st.Unchanged != 200 {
		t.Errorf("actor stats %+v", st)
	}
	if st := second["payment"].Stats; st.Deleted != 5 || st.Updated != 1 || st.Inserted != 0 {
		t.Errorf("payment stats %+v", st)
	}
	_, film := readAll(t, ts.db, "film")
	if v := col(film["uint 2"], "rating"); string(v.Bytes) != "NC-17" {
		t.Errorf("film 2 rating %s", fmtValue(v))
	}
	_, payment := readAll(t, ts.db, "payment")
	if v := col(payment["uint 8"], "amount"); string(v.Bytes) != "123.45" {
		t.Errorf("payment 8 amount %s", fmtValue(v))
	}
	vi, addr := readAll(t, ts.db, "address")
	if c := vi.Schema.Columns[len(vi.Schema.Columns)-1]; c.Name != "location" || c.Kind != snapshot.KindGeometry {
		t.Errorf("address schema last column %+v", c)
	}
	want := sourceStrings(t, e, src, "SELECT address_id, HEX(location) FROM address")
	compareColumn(t, addr, "location", want)
	if v := col(addr["uint 3"], "location"); v.Kind != snapshot.KindGeometry || len(v.Bytes) != 25 {
		t.Errorf("address 3 location %s", fmtValue(v))
	}
	// The old version still reads without the new column.
	r, err := ts.db.Reader(ctx, "address", snapshot.At{Version: first["address"].Version})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := len(r.Version().Schema.Columns); n != len(vi.Schema.Columns)-1 {
		t.Errorf("old version schema has %d columns", n)
	}
}

// TestSchemaChanges: an added column appears, a dropped one disappears, a
// retyped one takes its new kind, a changed key fails the run and leaves
// the current version as it was.
func TestSchemaChanges(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) {
		ctx := context.Background()
		db := e.tempDatabase(t, "schema")
		e.exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10) NOT NULL, b INT)", "INSERT INTO t VALUES (1, 'x', 10), (2, 'y', 20)")
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "m", db, nil)); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "t", Connection: "m", Resource: "t"}); err != nil {
			t.Fatal(err)
		}
		mustSucceed(t, ts.runWait(t, "t"))
		e.exec(t, db, "ALTER TABLE t ADD COLUMN c DATE NULL", "UPDATE t SET c = '2026-01-01' WHERE id = 1")
		r2 := ts.runWait(t, "t")
		mustSucceed(t, r2)
		vi, rows := readAll(t, ts.db, "t")
		if len(vi.Schema.Columns) != 4 || string(col(rows["int 1"], "c").Bytes) != "2026-01-01" || col(rows["int 2"], "c").Kind != snapshot.KindNull {
			t.Fatalf("after add: %+v %v", vi.Schema, rows)
		}
		e.exec(t, db, "ALTER TABLE t DROP COLUMN b")
		r3 := ts.runWait(t, "t")
		mustSucceed(t, r3)
		vi, rows = readAll(t, ts.db, "t")
		if len(vi.Schema.Columns) != 3 || col(rows["int 1"], "b").Kind != 255 {
			t.Fatalf("after drop: %+v %+v", vi.Schema, rows["int 1"])
		}
		// A retyped column: every row's cell is rewritten in the new kind.
		e.exec(t, db, e.dialect("ALTER TABLE t MODIFY COLUMN c VARCHAR(20) NULL"))
		r3 = ts.runWait(t, "t")
		mustSucceed(t, r3)
		vi, rows = readAll(t, ts.db, "t")
		if c := vi.Schema.Columns[2]; c.Name != "c" || c.Kind != snapshot.KindString || r3.Stats.Updated != 1 {
			t.Fatalf("after retype: %+v, stats %+v", vi.Schema, r3.Stats)
		}
		if v := col(rows["int 1"], "c"); v.Kind != snapshot.KindString || string(v.Bytes) != "2026-01-01" {
			t.Fatalf("retyped value %s", fmtValue(v))
		}
		e.exec(t, db, e.dialect("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (a)"))
		r4 := ts.runWait(t, "t")
		if r4.Status != RunFailed || !strings.Contains(r4.Error, "key") || !strings.Contains(r4.Error, "(a)") {
			t.Fatalf("changed key: %+v", r4)
		}
		cur, _ := readAll(t, ts.db, "t")
		if cur.Version != r3.Version {
			t.Fatalf("current version %d after failed run, want %d", cur.Version, r3.Version)
		}
	})
}

// TestKeysetPaging pages awkward keys in chunks of 2 rows.
func TestKeysetPaging(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "keys")
	e.exec(t, db,
		"CREATE TABLE `Select` (`from` VARBINARY(8) NOT NULL, `Mixed.Case``x` BIGINT UNSIGNED NOT NULL, v INT, PRIMARY KEY (`from`, `Mixed.Case``x`))",
		"INSERT INTO `Select` VALUES (x'00', 18446744073709551615, 1), (x'00', 9223372036854775808, 2), (x'00', 1, 3), (x'ff80', 5, 4), (x'c328', 7, 5), ('', 0, 6), (x'ff', 0, 7)",
		"CREATE TABLE dec_key (d DECIMAL(30,10) NOT NULL PRIMARY KEY, v INT)",
		"INSERT INTO dec_key VALUES (12345678901234567890.0000000001, 1), (12345678901234567890.0000000002, 2), (12345678901234567890.0000000003, 3), (-1, 4), (0, 5)",
		"CREATE TABLE enum_key (e ENUM('z','a','m') NOT NULL PRIMARY KEY, v INT)",
		"INSERT INTO enum_key VALUES ('m', 1), ('a', 2), ('z', 3)",
		"CREATE TABLE ci_key (s VARCHAR(10) COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY)",
		"INSERT INTO ci_key VALUES ('a'), ('B'), ('c'), ('D'), ('é'), ('f')",
		"CREATE TABLE uk (id INT NULL, code VARCHAR(5) NOT NULL, UNIQUE KEY (code), UNIQUE KEY (id))",
		"INSERT INTO uk VALUES (NULL, 'a'), (2, 'b'), (3, 'c')",
		"CREATE TABLE nokey (a INT, b INT)",
		"INSERT INTO nokey VALUES (1, 1), (2, 2), (2, 3)",
		"CREATE TABLE `db.dot` (id INT PRIMARY KEY)",
		"INSERT INTO `db.dot` VALUES (1), (2), (3)",
	)
	src := e.openSource(t, db, map[string]any{"chunk_rows": 2})
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
	if err != nil || len(rows) != 7 || strings.Join(sch.Key, ",") != "from,Mixed.Case`x" {
		t.Fatalf("Select: %v %+v %v", rows, sch, err)
	}
	wantOrder := []string{
		"kind 6 hex , uint 0, int 6",
		"kind 6 hex 00, uint 1, int 3",
		"kind 6 hex 00, uint 9223372036854775808, int 2",
		"kind 6 hex 00, uint 18446744073709551615, int 1",
		"kind 6 hex c328, uint 7, int 5",
		"kind 6 hex ff, uint 0, int 7",
		"kind 6 hex ff80, uint 5, int 4",
	}
	if strings.Join(rows, "\n") != strings.Join(wantOrder, "\n") {
		t.Errorf("Select rows:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(wantOrder, "\n"))
	}
	// P2: 7 rows in chunks of 2 are 4 queries, each with LIMIT 2.
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
	if rows, _, err := read(TableRequest{Resource: "dec_key"}); err != nil || len(rows) != 5 || !strings.Contains(rows[4], "12345678901234567890.0000000003") {
		t.Errorf("dec_key %v %v", rows, err)
	}
	if rows, _, err := read(TableRequest{Resource: "enum_key"}); err != nil || len(rows) != 3 || !strings.HasPrefix(rows[0], `kind 5 "z"`) {
		t.Errorf("enum_key %v %v", rows, err)
	}
	if rows, _, err := read(TableRequest{Resource: "ci_key"}); err != nil || len(rows) != 6 {
		t.Errorf("ci_key %v %v", rows, err)
	}
	if _, sch, err := read(TableRequest{Resource: "uk"}); err != nil || strings.Join(sch.Key, ",") != "code" {
		t.Errorf("uk key %v %v", sch.Key, err)
	}
	if _, _, err := read(TableRequest{Resource: "nokey"}); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "has no primary key and no unique key over NOT NULL columns") {
		t.Errorf("nokey: %v", err)
	}
	if _, _, err := read(TableRequest{Resource: "nokey", KeyColumns: []string{"a"}}); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "not unique") {
		t.Errorf("nokey duplicate a: %v", err)
	}
	if rows, _, err := read(TableRequest{Resource: "nokey", KeyColumns: []string{"a", "b"}}); err != nil || len(rows) != 3 {
		t.Errorf("nokey (a, b): %v %v", rows, err)
	}
	if _, _, err := read(TableRequest{Resource: "nokey", KeyColumns: []string{"zz"}}); !errors.Is(err, ErrNoKey) {
		t.Errorf("unknown key column: %v", err)
	}
	if rows, _, err := read(TableRequest{Resource: "db.dot"}); err != nil || len(rows) != 3 {
		t.Errorf("db.dot: %v %v", rows, err)
	}
	if rows, _, err := read(TableRequest{Resource: "`" + db + "`.`db.dot`"}); err != nil || len(rows) != 3 {
		t.Errorf("quoted db.dot: %v %v", rows, err)
	}
	if rows, _, err := read(TableRequest{Resource: db + ".db.dot"}); err != nil || len(rows) != 3 {
		t.Errorf("schema.db.dot: %v %v", rows, err)
	}
	if _, _, err := read(TableRequest{Resource: "nosuch"}); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("nosuch: %v", err)
	}
	if _, _, err := read(TableRequest{Resource: "sakila.film_list", KeyColumns: []string{"FID"}, ChunkRows: 400}); err != nil {
		t.Errorf("a view by key_columns: %v", err)
	}
}

// TestTableReaderCancel: a cancelled context stops a read with the
// context's error.
func TestTableReaderCancel(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) {
		db := e.longTable(t, 1000)
		src := openEnvSource(t, e, db, map[string]any{"chunk_rows": 100})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tr, err := src.OpenTable(ctx, TableRequest{Resource: "big"})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		n := 0
		for tr.Next(ctx) {
			if n++; n == 150 {
				cancel()
			}
		}
		if n >= 1000 || !errors.Is(tr.Err(), context.Canceled) {
			t.Fatalf("read %d rows after cancel, err %v", n, noteErr(tr.Err()))
		}
	})
}
