package e2e

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// tablesVersion is what a copy test reads of a version of a dataset of
// several tables.
type tablesVersion struct {
	Version int64 `json:"version"`
	Source  struct {
		Resource string `json:"resource"`
	} `json:"source"`
	Stats struct {
		Rows     int64  `json:"rows"`
		Checksum string `json:"checksum"`
	} `json:"stats"`
	Tables []struct {
		Name  string `json:"name"`
		Stats struct {
			Rows     int64  `json:"rows"`
			Checksum string `json:"checksum"`
		} `json:"stats"`
	} `json:"tables"`
}

func (p *proc) tablesVersion(t *testing.T, dataset string, v int64) tablesVersion {
	t.Helper()
	var tv tablesVersion
	p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/%s/versions/%d", dataset, v), nil, &tv)
	return tv
}

// tableRowsOf is the NDJSON scan of one table of a version, whole.
func (p *proc) tableRowsOf(t *testing.T, dataset, table string, v int64) []byte {
	t.Helper()
	return p.mustCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/%s/tables/%s/rows?version=%d", dataset, url.PathEscape(table), v), nil,
		"Accept", "application/x-ndjson").body
}

// TestCopyTablesEdgeToCentral runs two snapstore processes, each on its
// own Pebble: the edge takes versions of two SQLite tables as one dataset
// of several tables, accounts and transfers, every change of the source
// one transaction touching both (a transfer row and the two balances it
// moves). The central server copies one table into a dataset of one
// table, by the table's diff, and every table into a dataset of several
// tables. Each copied table must equal the edge's table at the version
// copied (rows, count, checksum), read by the table's diff after the
// first copy; each version of the copy of every table must be one edge
// version whole, the one it records: the edge version whose tables have
// its checksums, row for row, every table read by its diff after the
// first copy.
func TestCopyTablesEdgeToCentral(t *testing.T) { testCopyTablesEdgeToCentral(t) }

// TestCopyTablesEdgeToCentralHBase is TestCopyTablesEdgeToCentral with
// the central server on the test HBase.
func TestCopyTablesEdgeToCentralHBase(t *testing.T) { testCopyTablesEdgeToCentral(t, hbaseEnv(t)...) }

func testCopyTablesEdgeToCentral(t *testing.T, centralEnv ...string) {
	const accounts = 2000
	srcDir := t.TempDir()
	srcPath := filepath.Join(srcDir, "bank.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.SetMaxOpenConns(1)
	exec := func(q string) {
		t.Helper()
		if _, err := src.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance DECIMAL(14,2) NOT NULL)`)
	exec(`CREATE TABLE transfers (id INTEGER PRIMARY KEY, src INTEGER NOT NULL, dst INTEGER NOT NULL, amount INTEGER NOT NULL)`)
	exec(fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		INSERT INTO accounts SELECT i, 'owner ' || i, 1000 FROM n`, accounts))
	transfer := 0
	// move makes n transfers, each one transaction of the source.
	move := func(n int) {
		t.Helper()
		for range n {
			transfer++
			a, b := transfer*7%accounts+1, transfer*13%accounts+1
			exec(fmt.Sprintf(`BEGIN; INSERT INTO transfers VALUES (%d, %d, %d, %d);
				UPDATE accounts SET balance = balance - %[4]d WHERE id = %[2]d; UPDATE accounts SET balance = balance + %[4]d WHERE id = %[3]d; COMMIT`,
				transfer, a, b, transfer%50+1))
		}
	}
	move(500)

	edge := startServer(t, "e2e-copytables-Vn58c")
	central := startServer(t, "e2e-copytables-Vn58c", centralEnv...)
	edge.createAdapterConn(t, map[string]any{"name": "bank", "type": "sqlite", "options": map[string]any{"path": srcPath}})
	edge.createAdapter(t, map[string]any{"name": "bank", "connection": "bank", "include": []string{"*"}, "retention": map[string]any{"min_versions": 50}})
	edge.mustRun(t, "bank")
	central.createAdapterConn(t, map[string]any{"name": "edge", "type": "snapstore", "options": map[string]any{"url": edge.base, "chunk_rows": 500}})
	central.createAdapter(t, map[string]any{"name": "transfers", "connection": "edge", "resource": "bank.transfers", "retention": map[string]any{"min_versions": 50}})
	central.createAdapter(t, map[string]any{"name": "bankcopy", "connection": "edge", "include": []string{"bank.*"}, "parallelism": 2,
		"retention": map[string]any{"min_versions": 50}})
	// A table the edge's dataset does not hold is refused, named.
	if r := central.mustCall(t, http.StatusNotFound, "POST", "/v1/adapters", map[string]any{"name": "nope", "connection": "edge", "resource": "bank.loans"}); !strings.Contains(string(r.body), `has no table \"loans\"`) {
		t.Errorf("an adapter of a table the edge lacks: %s", r.body)
	}

	modeOf := func(id string) string {
		var rec struct {
			Mode string `json:"mode"`
		}
		central.jsonCall(t, http.StatusOK, "GET", "/v1/runs/"+id, nil, &rec)
		return rec.Mode
	}
	// edgeTable is table of the edge's version ev.
	edgeTable := func(ev tablesVersion, table string) (rows int64, checksum string) {
		for _, tb := range ev.Tables {
			if tb.Name == table {
				return tb.Stats.Rows, tb.Stats.Checksum
			}
		}
		t.Fatalf("edge version %d has no table %s", ev.Version, table)
		return 0, ""
	}
	// checkTable wants the copy of one table equal to the edge's table at
	// the version it names.
	checkTable := func(step string, cv int64, wantMode string, id string) {
		t.Helper()
		v := central.copyVersion(t, "transfers", cv)
		var ev int64
		if _, err := fmt.Sscanf(v.Source.Resource, "bank.transfers@%d", &ev); err != nil {
			t.Fatalf("%s: the copy records %q, want bank.transfers@N", step, v.Source.Resource)
		}
		rows, sum := edgeTable(edge.tablesVersion(t, "bank", ev), "transfers")
		if v.Stats.Rows != rows || v.Stats.Checksum != sum {
			t.Errorf("%s: copy version %d: %d rows checksum %s; edge version %d: %d rows checksum %s", step, cv, v.Stats.Rows, v.Stats.Checksum, ev, rows, sum)
		}
		if got, want := central.rowsOf(t, "transfers", cv), edge.tableRowsOf(t, "bank", "transfers", ev); string(got) != string(want) {
			t.Errorf("%s: the rows of copy version %d differ from the edge's transfers at version %d", step, cv, ev)
		}
		if m := modeOf(id); m != wantMode {
			t.Errorf("%s: mode %q, want %s", step, m, wantMode)
		}
	}
	// checkAll wants the copy of every table to be one edge version
	// whole: the edge version whose tables have the copy's checksums,
	// row for row, its balances explained by its transfers; the version
	// and the run's point to name it, and the run and each of its tables
	// to be read in wantMode.
	checkAll := func(step string, cv int64, wantMode, id string) {
		t.Helper()
		var rec struct {
			Mode  string `json:"mode"`
			Point struct {
				Position string `json:"position"`
			} `json:"point"`
			Tables []struct {
				Name string `json:"name"`
				Mode string `json:"mode"`
			} `json:"tables"`
		}
		central.jsonCall(t, http.StatusOK, "GET", "/v1/runs/"+id, nil, &rec)
		if rec.Mode != wantMode || len(rec.Tables) != 2 {
			t.Errorf("%s: run %+v, want mode %s and two tables", step, rec, wantMode)
		}
		for _, tb := range rec.Tables {
			if tb.Mode != wantMode {
				t.Errorf("%s: table %s read in mode %s, want %s", step, tb.Name, tb.Mode, wantMode)
			}
		}
		c := central.tablesVersion(t, "bankcopy", cv)
		sums := map[string]string{}
		for _, tb := range c.Tables {
			sums[tb.Name] = tb.Stats.Checksum
		}
		if len(sums) != 2 || sums["bank.accounts"] == "" || sums["bank.transfers"] == "" {
			t.Fatalf("%s: copy version %d has tables %v, want bank.accounts and bank.transfers", step, cv, sums)
		}
		var ev tablesVersion
		for v := edge.dataset(t, "bank").CurrentVersion; v > 0; v-- {
			e := edge.tablesVersion(t, "bank", v)
			_, a := edgeTable(e, "accounts")
			_, tr := edgeTable(e, "transfers")
			if a == sums["bank.accounts"] && tr == sums["bank.transfers"] {
				ev = e
				break
			}
		}
		if ev.Version == 0 {
			t.Fatalf("%s: copy version %d is no edge version whole (checksums %v)", step, cv, sums)
		}
		if want := fmt.Sprintf("bank@%d", ev.Version); c.Source.Resource != want || rec.Point.Position != want {
			t.Errorf("%s: copy version %d records %q, its run's point %q; want %s", step, cv, c.Source.Resource, rec.Point.Position, want)
		}
		for _, tb := range []string{"accounts", "transfers"} {
			if got, want := central.tableRowsOf(t, "bankcopy", "bank."+tb, cv), edge.tableRowsOf(t, "bank", tb, ev.Version); string(got) != string(want) {
				t.Errorf("%s: the rows of copy version %d table %s differ from the edge's at version %d", step, cv, tb, ev.Version)
			}
		}
		t.Logf("%s: copy version %d = edge version %d, every table", step, cv, ev.Version)
	}

	c := central.mustRun(t, "transfers")
	checkTable("first copy of a table", c.Version, "full", c.ID)
	c = central.mustRun(t, "bankcopy")
	checkAll("first copy of every table", c.Version, "full", c.ID)
	for i := 1; i <= 6; i++ {
		move(40 * i)
		edge.mustRun(t, "bank")
		if i%2 == 0 {
			exec(fmt.Sprintf(`DELETE FROM transfers WHERE id %% %d = 0`, 17+i))
			edge.mustRun(t, "bank")
		}
		c = central.mustRun(t, "transfers")
		checkTable(fmt.Sprintf("copy %d of a table", i), c.Version, "diff", c.ID)
		c = central.mustRun(t, "bankcopy")
		checkAll(fmt.Sprintf("copy %d of every table", i), c.Version, "diff", c.ID)
	}
}
