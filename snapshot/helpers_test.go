package snapshot

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/snapstore/snapstore/store/hbase/hbasetest"
	"github.com/snapstore/snapstore/txn"
	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind, once the HBase
// test tables are dropped (hbasetest.Finish).
func TestMain(m *testing.M) {
	code := m.Run()
	hbasetest.Finish()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

var testSchema = Schema{
	Columns: []Column{{Name: "id", Kind: KindInt}, {Name: "name", Kind: KindString, Nullable: true}},
	Key:     []string{"id"},
}

func iv(i int64) Value  { return Value{Kind: KindInt, Int: i} }
func sv(s string) Value { return Value{Kind: KindString, Bytes: []byte(s)} }

// putRows begins a run of dataset "t" (testSchema, no shrink guard) and
// puts rows.
func putRows(t *testing.T, db *DB, rows [][]Value) *Run {
	t.Helper()
	ctx := context.Background()
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if err := r.Put(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// runRows commits a run of dataset "t" with rows.
func runRows(t *testing.T, db *DB, rows [][]Value) VersionInfo {
	t.Helper()
	vi, err := putRows(t, db, rows).Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return vi
}

// abortRows aborts a run of dataset "t" with rows and returns its id.
func abortRows(t *testing.T, db *DB, rows [][]Value) int64 {
	t.Helper()
	r := putRows(t, db, rows)
	if err := r.Abort(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	return r.TxnID()
}

// readName reads the name of row id at the current version of "t".
func readName(t *testing.T, db *DB, id int64) (string, int64) {
	t.Helper()
	ctx := context.Background()
	r, err := db.Reader(ctx, "t", At{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	row, err := r.Get(ctx, []Value{iv(id)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(row.Values[1].Bytes), r.Version().Version
}

// scanJSON returns every row of r as JSON, in key order.
func scanJSON(t *testing.T, r *Reader) []string {
	t.Helper()
	it, err := r.Scan(context.Background(), ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for it.Next() {
		b, _ := it.Row().MarshalJSON()
		out = append(out, string(b))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// crash makes db as a killed process leaves it, for tests that then close
// its store under it and reopen: the writes each run handed to its writer
// land (or fail), and the writers stop, but nothing ends, aborts or
// commits; then the DB halts (no keeper, nothing more written).
func (db *DB) crash() {
	for _, ds := range db.allDatasets() {
		ds.mu.Lock()
		var runs []*Run
		switch r := ds.run.(type) {
		case *Run:
			runs = append(runs, r)
		case *TablesRun:
			for _, w := range r.writers {
				runs = append(runs, w.r)
			}
		}
		ds.mu.Unlock()
		for _, r := range runs {
			if r.w != nil {
				r.w.stop() // its writes take ds.mu (the slot's deadline)
				r.w = nil
			}
		}
	}
	db.halt()
}

// halt stops the DB as a killed process stops: nothing more is written,
// its runs and writer slots are left as they are.
func (db *DB) halt() {
	if db.closed.Swap(true) {
		return
	}
	db.stopKeeper()
	db.metrics.unregister()
	db.unregisterLocal()
}

// invalidIDs returns the invalid transactions of dataset name as this DB
// knows them.
func invalidIDs(db *DB, name string) []int64 { return txnsOf(db, name).InvalidIDs() }

// inProgressIDs returns the transactions in progress of dataset name as
// this DB knows them.
func inProgressIDs(db *DB, name string) []int64 { return txnsOf(db, name).InProgressIDs() }

func txnsOf(db *DB, name string) txn.State {
	db.mu.Lock()
	ds := db.datasets[name]
	db.mu.Unlock()
	if ds == nil {
		return txn.State{}
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return ds.st.Txns.Clone()
}
