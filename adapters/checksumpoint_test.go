package adapters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/snapstore/snapstore/api"
)

// TestChecksumPoint runs two adapters of one table of 8 chunks, one with
// parallelism 4 (its chunk checksums spread over the 4 connections of one
// point of the source, checksumpoint.go) and one without (one connection),
// through the read modes of checksums.go: every run of the two has the
// same mode, chunks skipped, checksum and digest. Then a transaction
// that touches every chunk commits after the point opened and before any
// checksum is computed: the run at the point must not see it in any chunk
// (verified, nothing changed), and the next run sees all of it. Had the
// readers of the checksums started their snapshots after the point's
// first connection, as readers opened one by one do, they would see the
// transaction in the chunks they compute and the run would not verify.
func TestChecksumPoint(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) {
		ctx := context.Background()
		db := e.tempDatabase(t, "cpoint")
		const chunks = 8
		e.exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, amount INT NOT NULL, s VARCHAR(20))")
		for lo := 0; lo < chunks*digestChunkRows; lo += 2000 {
			vals := make([]string, 0, 2000)
			for i := lo + 1; i <= lo+2000; i++ {
				vals = append(vals, fmt.Sprintf("(%d, 100, 'row %d')", i, i))
			}
			e.exec(t, db, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
		}
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "src", db, nil)); err != nil {
			t.Fatal(noteErr(err))
		}
		for _, a := range []api.Adapter{{Name: "par", Connection: "src", Resource: "t", Parallelism: 4}, {Name: "ser", Connection: "src", Resource: "t"}} {
			if _, err := ts.svc.CreateAdapter(ctx, a); err != nil {
				t.Fatal(noteErr(err))
			}
		}
		digestOf := func(rec RunRecord) []byte {
			t.Helper()
			b, err := ts.db.SourceDigest(ctx, rec.Dataset, rec.Version)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		both := func(what, mode string, verified bool, skipped int) RunRecord {
			t.Helper()
			par, ser := loggedRun(t, ts, "par", what+" (parallelism 4)"), loggedRun(t, ts, "ser", what+" (serial)")
			for _, rec := range []RunRecord{par, ser} {
				if rec.Mode != mode || rec.Verified != verified || rec.ChunksSkipped != skipped {
					t.Fatalf("%s, %s: mode %s verified %v skipped %d; want %s %v %d", what, rec.Adapter, rec.Mode, rec.Verified, rec.ChunksSkipped, mode, verified, skipped)
				}
			}
			if par.Chunks != ser.Chunks || par.Stats.Checksum != ser.Stats.Checksum || par.Stats.Rows != ser.Stats.Rows {
				t.Errorf("%s: parallel %d chunks, checksum %s, %d rows; serial %d, %s, %d", what, par.Chunks, par.Stats.Checksum, par.Stats.Rows,
					ser.Chunks, ser.Stats.Checksum, ser.Stats.Rows)
			}
			if p, s := digestOf(par), digestOf(ser); !bytes.Equal(p, s) {
				t.Errorf("%s: digests differ:\n%s\n%s", what, p, s)
			}
			if mode != ModeFull || verified {
				if par.ChecksumConnections != 4 || par.Point == nil || par.Point.Connections != 4 || ser.ChecksumConnections != 1 || ser.Point != nil {
					t.Errorf("%s: parallel checksums over %d connections, point %+v; serial over %d, point %+v", what,
						par.ChecksumConnections, par.Point, ser.ChecksumConnections, ser.Point)
				}
			}
			return par
		}
		both("first run", ModeFull, false, 0)
		both("nothing changed, read in full", ModeFull, true, 0)
		both("nothing changed", ModeVerify, true, chunks)
		e.exec(t, db, fmt.Sprintf("UPDATE t SET s = 'changed' WHERE id IN (%d, %d)", 2*digestChunkRows+3, 6*digestChunkRows+9))
		both("two chunks changed", ModeChunks, false, chunks-2)

		// One transaction (one statement) moves 1 from the first chunk to
		// each other chunk, committed once the point is open.
		ids := []string{"1"}
		for i := 1; i < chunks; i++ {
			ids = append(ids, fmt.Sprint(i*digestChunkRows+1))
		}
		transfer := fmt.Sprintf("UPDATE t SET amount = amount + CASE WHEN id = 1 THEN %d ELSE 1 END WHERE id IN (%s)", 1-chunks, strings.Join(ids, ", "))
		moved := false
		ts.svc.testHookChecksumPoint = func(ctx context.Context, adapter string) {
			if !moved {
				moved = true
				e.exec(t, db, transfer)
			}
		}
		at := loggedRun(t, ts, "par", "a transfer over every chunk committed after the point opened")
		ts.svc.testHookChecksumPoint = nil
		if !moved || at.Mode != ModeVerify || !at.Verified || at.ChunksSkipped != chunks {
			t.Fatalf("run at the point before the transfer: moved %v, mode %s, verified %v, skipped %d; want verify, %d skipped",
				moved, at.Mode, at.Verified, at.ChunksSkipped, chunks)
		}
		after := both("after the transfer", ModeChunks, false, 0)
		if after.Stats.Updated != chunks {
			t.Errorf("run after the transfer: %+v, want %d rows updated", after.Stats, chunks)
		}
	})
}

// TestChecksumPointOneConnection: on a source whose point has one
// connection (SQLite's one read transaction), an adapter of one table
// with parallelism 4 computes its checksums on that connection, one
// after another, and its record says so.
func TestChecksumPointOneConnection(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "src.db")
	sqliteExec(t, path, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INT NOT NULL)",
		fmt.Sprintf("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) INSERT INTO t SELECT i, i FROM s", 2*digestChunkRows+1))
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "par", Connection: "src", Resource: "t", Parallelism: 4}); err != nil {
		t.Fatal(noteErr(err))
	}
	loggedRun(t, ts, "par", "first run")
	loggedRun(t, ts, "par", "nothing changed, read in full")
	rec := loggedRun(t, ts, "par", "nothing changed")
	if rec.Mode != ModeVerify || rec.ChecksumConnections != 1 || rec.Point == nil || rec.Point.Mode != "one_transaction" || rec.Point.Connections != 1 {
		t.Errorf("verify run: mode %s, checksums over %d connections, point %+v", rec.Mode, rec.ChecksumConnections, rec.Point)
	}
}

// TestChecksumPointLocksTable: on PostgreSQL, where a TRUNCATE is not
// MVCC-safe, the point of an adapter of one table whose checksums go over
// several connections locks the table before its snapshot, as the point
// of a run of several tables does: a TRUNCATE once the point is open
// waits for the run (here it gives up after its own lock_timeout), and
// the run verifies the rows it had instead of finding the table empty.
func TestChecksumPointLocksTable(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "cplock")
	e.exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(20))",
		fmt.Sprintf("INSERT INTO t SELECT i, 'row ' || i FROM generate_series(1, %d) AS i", 4*digestChunkRows))
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "src", db, nil)); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "par", Connection: "src", Resource: "t", Parallelism: 2}); err != nil {
		t.Fatal(noteErr(err))
	}
	mustSucceed(t, ts.runWait(t, "par"))
	mustSucceed(t, ts.runWait(t, "par")) // records the checksums
	var truncErr error
	ts.svc.testHookChecksumPoint = func(ctx context.Context, adapter string) {
		c := e.connect(t, db)
		if _, err := c.Exec(ctx, "SET lock_timeout = '1s'"); err != nil {
			t.Error(err)
			return
		}
		_, truncErr = c.Exec(ctx, "TRUNCATE t")
	}
	rec := ts.runWait(t, "par")
	ts.svc.testHookChecksumPoint = nil
	var pgErr *pgconn.PgError
	if !errors.As(truncErr, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("TRUNCATE while the point is open: %v, want lock_not_available (55P03): the point does not lock the table", truncErr)
	}
	if rec.Status != RunSucceeded || rec.Mode != ModeVerify || !rec.Verified || rec.Point == nil {
		t.Fatalf("run at the point: %s mode %s verified %v point %+v (%s); want verified at a point", rec.Status, rec.Mode, rec.Verified, rec.Point, rec.Error)
	}
}
