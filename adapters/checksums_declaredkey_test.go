package adapters

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// TestDeclaredKeyRanges: a key named by key_columns that no unique index
// declares, over NOT NULL columns (a log table's), gets range checksums
// as a primary key does (source.RangesSound): a run after one change
// reads only the range that holds it, its row counted once, although a
// range read of such a key starts at the previous range's last key; a
// duplicate key that appears later fails the run in the range it lands
// in. A key with a column that may be NULL is read in full each run,
// since no range holds a NULL key. On MariaDB, PostgreSQL and SQLite.
func TestDeclaredKeyRanges(t *testing.T) {
	const rows = 3*digestChunkRows + 41
	forEachTablesSource(t, func(t *testing.T, src tablesSource) {
		ctx := context.Background()
		src.exec(
			"CREATE TABLE ev (at INTEGER NOT NULL, kind INTEGER NOT NULL, n INTEGER)",
			"CREATE TABLE evn (at INTEGER NOT NULL, kind INTEGER, n INTEGER)",
		)
		var ins []string
		for i := 0; i < rows; i += 1000 {
			var vals []string
			for j := i; j < min(i+1000, rows); j++ {
				vals = append(vals, fmt.Sprintf("(%d, %d, %d)", j/2, j%2, j))
			}
			ins = append(ins, "INSERT INTO ev VALUES "+strings.Join(vals, ", "), "INSERT INTO evn VALUES "+strings.Join(vals, ", "))
		}
		src.exec(ins...)
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, src.conn); err != nil {
			t.Fatal(noteErr(err))
		}
		for _, a := range []api.Adapter{
			{Name: "ev", Connection: "src", Resource: "ev", KeyColumns: []string{"at", "kind"}},
			{Name: "evn", Connection: "src", Resource: "evn", KeyColumns: []string{"at", "kind"}},
		} {
			if _, err := ts.svc.CreateAdapter(ctx, a); err != nil {
				t.Fatal(noteErr(err))
			}
		}
		// Each run read in full says why (RunRecord.ModeReason).
		want := func(rec RunRecord, what, mode, reason string) {
			t.Helper()
			if rec.Mode != mode || rec.ModeReason != reason {
				t.Fatalf("%s: mode %q because %q, want %q because %q", what, rec.Mode, rec.ModeReason, mode, reason)
			}
		}
		const nullable = "no range checksums: key column kind may be NULL and no unique index declares the key"
		want(loggedRun(t, ts, "ev", "ev first run"), "ev first run", ModeFull, "no checksums recorded yet: the dataset has no version")
		want(loggedRun(t, ts, "ev", "ev nothing changed, read in full"), "ev nothing changed", ModeFull, "no range checksums recorded yet: the last run inserted every row")
		want(loggedRun(t, ts, "evn", "evn first run"), "evn first run", ModeFull, nullable)
		want(loggedRun(t, ts, "evn", "evn nothing changed, read in full"), "evn nothing changed", ModeFull, nullable)
		want(loggedRun(t, ts, "ev", "ev nothing changed"), "ev nothing changed, by its ranges", ModeVerify, "")
		want(loggedRun(t, ts, "evn", "evn nothing changed"), "a key with a nullable column, nothing changed", ModeFull, nullable)

		// One row changed, in the second range: read alone, from the
		// first range's last key on.
		src.exec(fmt.Sprintf("UPDATE ev SET n = -1 WHERE at = %d AND kind = 1", (digestChunkRows+100)/2))
		rec := loggedRun(t, ts, "ev", "ev one row changed")
		want(rec, "ev one row changed", ModeChunks, "")
		if rec.Stats.Updated != 1 || rec.Stats.Inserted != 0 || rec.Stats.Deleted != 0 || rec.Stats.Rows != rows || rec.ChunksSkipped == 0 || rec.RowsRead > digestChunkRows+1 {
			t.Errorf("ev one row changed: stats %+v, chunks %d skipped %d, rows read %d", rec.Stats, rec.Chunks, rec.ChunksSkipped, rec.RowsRead)
		}
		r, err := ts.db.Reader(ctx, "ev", snapshot.At{})
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Scan(ctx, snapshot.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, changed := 0, 0
		for it.Next() {
			n++
			if v := it.Row().Values[2]; v.Kind == snapshot.KindInt && v.Int == -1 {
				changed++
			}
		}
		if err := it.Close(); err != nil || n != rows || changed != 1 {
			t.Errorf("ev: %d rows in the version, %d changed (%v), want %d and 1", n, changed, err, rows)
		}
		r.Close()

		// A duplicate key in the third range: the run reads that range
		// and fails naming the key.
		dup := (2*digestChunkRows + 100) / 2
		src.exec(fmt.Sprintf("INSERT INTO ev VALUES (%d, 0, 7)", dup))
		bad := ts.runWait(t, "ev")
		if bad.Status != RunFailed || bad.Code != "duplicate_key" || !strings.Contains(bad.Error, fmt.Sprintf("(at=%d, kind=0) 2 times", dup)) {
			t.Errorf("a run after a duplicate key: %s %s: %s", bad.Status, bad.Code, bad.Error)
		}
		if cur := mustVersion(t, ts.db, "ev", 0); cur.Version != rec.Version {
			t.Errorf("current version %d after the failed run, want %d", cur.Version, rec.Version)
		}
	})
}
