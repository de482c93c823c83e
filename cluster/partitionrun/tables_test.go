package partitionrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

var linesSchema = snapshot.Schema{
	Columns: []snapshot.Column{{Name: "order_id", Kind: snapshot.KindInt}, {Name: "line", Kind: snapshot.KindInt}, {Name: "sku", Kind: snapshot.KindString}},
	Key:     []string{"order_id", "line"},
}

// lineRows returns 3 lines of each of n orders; skus carry tag.
func lineRows(n int, tag string) [][]snapshot.Value {
	var rows [][]snapshot.Value
	for i := range n {
		for l := range 3 {
			rows = append(rows, []snapshot.Value{{Kind: snapshot.KindInt, Int: int64(i)}, {Kind: snapshot.KindInt, Int: int64(l)},
				{Kind: snapshot.KindString, Bytes: fmt.Appendf(nil, "%s-%d-%d", tag, i, l)}})
		}
	}
	return rows
}

// tablesRun is one run of the dataset "shop" of the tables orders and
// lines, with its rows.
type tablesRun struct {
	orders, lines [][]snapshot.Value
}

// runTablesSpread runs r as a run of named tables coordinated by n, each
// table's rows put from a goroutine of its own, every table partitioned
// over the partition table; the outcome of the commit, or of the first
// failed Finish.
func runTablesSpread(t *testing.T, n *partitionNode, r tablesRun) (snapshot.VersionInfo, error) {
	t.Helper()
	ctx := context.Background()
	parts := n.runs.Partitions()
	tr, err := n.db.BeginTablesRun(ctx, snapshot.DatasetConfig{Name: "shop", Guard: snapshot.Guard{MaxShrink: 1}}, snapshot.TablesRunOptions{
		Tables: []snapshot.TableSpec{{Name: "orders", Schema: ledgerSchema, Partitions: parts}, {Name: "lines", Schema: linesSchema, Partitions: parts}}})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := n.runs.PartitionTables(ctx, tr, adapters.PartitionedTables{Compression: "metadata"})
	if err != nil {
		t.Fatal(errors.Join(err, tr.Abort(ctx, err.Error())))
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, tb := range []struct {
		name string
		rows [][]snapshot.Value
	}{{"orders", r.orders}, {"lines", r.lines}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := tw.Table(tb.name)
			for _, row := range tb.rows {
				if errs[i] = w.Put(ctx, row); errs[i] != nil {
					return
				}
			}
			errs[i] = w.Finish(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return snapshot.VersionInfo{}, errors.Join(err, tw.Abort(ctx, err.Error()))
	}
	return tw.Commit(ctx)
}

// scanTable returns every row of table of "shop" at version v on db.
func scanTable(t *testing.T, db *snapshot.DB, table string, v int64) []string {
	t.Helper()
	ctx := context.Background()
	if err := db.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := db.TableReader(ctx, "shop", table, snapshot.At{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it, err := r.Scan(ctx, snapshot.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for it.Next() {
		b, err := it.Row().MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// oneProcess commits the rows of r as a run of named tables written in
// one process, into the dataset "shop" of db.
func oneProcess(t *testing.T, db *snapshot.DB, r tablesRun) snapshot.VersionInfo {
	t.Helper()
	ctx := context.Background()
	tr, err := db.BeginTablesRun(ctx, snapshot.DatasetConfig{Name: "shop", Guard: snapshot.Guard{MaxShrink: 1}}, snapshot.TablesRunOptions{
		Tables: []snapshot.TableSpec{{Name: "orders", Schema: ledgerSchema}, {Name: "lines", Schema: linesSchema}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, rows := range map[string][][]snapshot.Value{"orders": r.orders, "lines": r.lines} {
		for _, row := range rows {
			if err := tr.Table(name).Put(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
	}
	vi, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return vi
}

// A run of two tables partitioned over two nodes and real transports
// commits one version whose every table reads as its rows, with the
// counts and checksums of the same rows written in one process; a second
// run with changes too. Both nodes write partitions of both tables.
func TestPartitionedTables_TwoNodes(t *testing.T) {
	ctx := context.Background()
	a, b := partitionNodes(t, time.Minute)
	ref, _ := partitionNodes(t, time.Minute)
	for round, r := range []tablesRun{
		{ledgerRows(1000, "first"), lineRows(300, "first")},
		{ledgerRows(900, "second"), lineRows(320, "second")},
	} {
		vi, err := runTablesSpread(t, a, r)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		want := oneProcess(t, ref.db, r)
		for i, gt := range vi.Tables {
			wt := want.Tables[i]
			gs, ws := gt.Stats, wt.Stats
			gs.BytesWritten, ws.BytesWritten = 0, 0
			if gt.Name != wt.Name || gs != ws {
				t.Fatalf("round %d table %s: %+v, one process %+v", round, gt.Name, gt.Stats, wt.Stats)
			}
		}
		for _, table := range []string{"orders", "lines"} {
			got, exp := scanTable(t, b.db, table, vi.Version), scanTable(t, ref.db, table, want.Version)
			if !slices.Equal(got, exp) || len(got) == 0 {
				t.Fatalf("round %d table %s: %d rows, want %d", round, table, len(got), len(exp))
			}
		}
	}
	if got := testutil.ToFloat64(b.runs.partsReported.WithLabelValues("remote")); got != 16 {
		t.Errorf("node b reported %v partitions of node a's runs, want 16 (4 of each table a run)", got)
	}
	if _, err := b.db.GetRecord(ctx, runRecordKind, "shop"); !errors.Is(err, snapshot.ErrRecordNotFound) {
		t.Errorf("the run record outlives the run: %v", err)
	}
}

// An owner that cannot be reached fails the run of every table after the
// owner wait; the current version stays as it was.
func TestPartitionedTables_OwnerDown(t *testing.T) {
	ctx := context.Background()
	a, b := partitionNodes(t, time.Second)
	first, err := runTablesSpread(t, a, tablesRun{ledgerRows(300, "first"), lineRows(100, "first")})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.xfr.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = runTablesSpread(t, a, tablesRun{ledgerRows(300, "second"), lineRows(100, "second")})
	if !errors.Is(err, adapters.ErrNodeUnreachable) {
		t.Fatalf("a run whose owner is down: %v", err)
	}
	d, err := a.db.Dataset(ctx, "shop")
	if err != nil || d.Current != first.Version || d.Versions != 1 {
		t.Fatalf("after the failed run: %+v %v, want version %d", d, err, first.Version)
	}
	if rows := scanTable(t, a.db, "orders", 0); len(rows) != 300 || !slices.ContainsFunc(rows, func(s string) bool { return s == `{"id":1,"name":"first-1"}` }) {
		t.Fatalf("orders after the failed run: %d rows", len(rows))
	}
}
