package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSakilaTablesHBase keeps a clone of Sakila as one dataset of many
// tables, through the built binary with the server's storage on the test
// HBase: every table at the first version equals the source; then the
// source changes (sakilaChanges), one table is dropped and another added,
// and the second version holds the new set of tables, each equal to the
// changed source, while the first version still reads as before, the
// dropped table included. The films, rentals, payments and inventory
// stay out of the dataset (exclude), to keep the test short on HBase.
func TestSakilaTablesHBase(t *testing.T) {
	t.Parallel() // mostly waiting (MariaDB, HBase, HTTP)
	e := getMySQLEnv(t)
	env := hbaseEnv(t)
	start := time.Now()
	dbName := fmt.Sprintf("e2e_sakila_tables_hbase_%d", os.Getpid())
	e.cloneSakila(t, dbName)
	src := e.open(t, dbName)
	execAll(t, src, []stmt{
		{"CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(40))", 0},
		{"INSERT INTO notes VALUES (1, 'kept at version 1'), (2, NULL)", 2},
	})
	exclude := []string{"film*", "rental", "payment", "inventory"}
	tables1 := slices.DeleteFunc(baseTables(t, src, dbName), func(tb string) bool {
		return strings.HasPrefix(tb, "film") || slices.Contains(exclude, tb)
	})
	if len(tables1) != 10 || !slices.Contains(tables1, "notes") {
		t.Fatalf("the clone has tables %v, want 9 of Sakila and notes", tables1)
	}
	specs1, before := readSakilaTables(t, src, dbName, tables1)
	t.Logf("clone: %s", time.Since(start).Round(time.Millisecond))

	p := startServer(t, e.Password, env...)
	p.createMySQLConnection(t, "sakila", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "sakila", "connection": "sakila", "include": []string{"*"}, "exclude": exclude,
		"allow_dropped_tables": true, "parallelism": 3})
	t.Logf("server up: %s", time.Since(start).Round(time.Millisecond))
	r1 := p.mustRun(t, "sakila")
	t.Logf("first run: %s", time.Since(start).Round(time.Millisecond))
	checkSakilaTables(t, p, dbName, tables1, "first run", r1.Version, specs1, before)

	execAll(t, src, sakilaChanges)
	execAll(t, src, []stmt{
		{"DROP TABLE notes", 0},
		{"CREATE TABLE extra (code VARCHAR(8) PRIMARY KEY, n BIGINT NOT NULL)", 0},
		{"INSERT INTO extra VALUES ('a', 1), ('b', -2), ('ü', 3)", 3},
	})
	tables2 := append(slices.DeleteFunc(slices.Clone(tables1), func(tb string) bool { return tb == "notes" }), "extra")
	specs2, after := readSakilaTables(t, src, dbName, tables2)
	r2 := p.mustRun(t, "sakila")
	t.Logf("second run: %s", time.Since(start).Round(time.Millisecond))
	if r2.Version <= r1.Version || r2.Verified {
		t.Fatalf("second run: version %d (verified %v) after %d", r2.Version, r2.Verified, r1.Version)
	}
	checkSakilaTables(t, p, dbName, tables2, "second run", r2.Version, specs2, after)
	checkSakilaTables(t, p, dbName, tables1, "first version after the second run", r1.Version, specs1, before)
	// The dropped table is absent from the current version.
	p.mustCall(t, http.StatusNotFound, "GET", "/v1/datasets/sakila/tables/"+url.PathEscape(dbName+".notes")+"/rows", nil)
	t.Logf("whole test: %s", time.Since(start).Round(time.Millisecond))
}
