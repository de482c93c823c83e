package adapters

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/store/pebble"
)

// benchTable creates a table of rows rows with 10 mixed columns (the shape
// docs/benchmarks.md measures) in a temporary database.
func benchTable(b *testing.B, e mysqlTestEnv, rows int) string {
	db := e.tempDatabase(b, "bench")
	e.exec(b, db, `CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(40), b BIGINT, c DECIMAL(12,2), d DATETIME(6),
		e DOUBLE, f VARCHAR(100), g DATE, h INT UNSIGNED, i VARBINARY(16))`,
		fmt.Sprintf(`INSERT INTO t SELECT seq, CONCAT('name ', seq), seq * 1000003, seq / 7, '2026-01-01' + INTERVAL seq SECOND,
		seq / 3, REPEAT('x', seq %% 90), '2020-01-01' + INTERVAL (seq %% 3000) DAY, seq %% 65536, UNHEX(MD5(seq)) FROM seq_1_to_%d`, rows))
	return db
}

// BenchmarkMySQLPull compares the floor (the driver reading every row as
// sql.RawBytes) with a full pull into a Pebble-backed snapshot, a re-run
// with nothing changed, and a re-run after 1% of rows changed.
func BenchmarkMySQLPull(b *testing.B) {
	e := mysqlEnv(b)
	const rows = 100_000
	db := benchTable(b, e, rows)
	ctx := context.Background()
	b.Run(fmt.Sprintf("rows=%d/path=driver-read", rows), func(b *testing.B) {
		a := e.admin(b, db)
		for b.Loop() {
			r, err := a.QueryContext(ctx, "SELECT * FROM t")
			if err != nil {
				b.Fatal(err)
			}
			raw := make([]sql.RawBytes, 10)
			dest := make([]any, 10)
			for i := range raw {
				dest[i] = &raw[i]
			}
			n := 0
			for r.Next() {
				if err := r.Scan(dest...); err != nil {
					b.Fatal(err)
				}
				n++
			}
			r.Close()
			if n != rows {
				b.Fatalf("%d rows", n)
			}
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run(fmt.Sprintf("rows=%d/path=table-reader", rows), func(b *testing.B) {
		src := e.openSource(b, db, nil)
		for b.Loop() {
			tr, err := src.OpenTable(ctx, TableRequest{Resource: "t"})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for tr.Next(ctx) {
				n++
			}
			if err := tr.Err(); err != nil || n != rows {
				b.Fatalf("%d rows, %v", n, err)
			}
			tr.Close()
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	for _, mode := range []string{"full", "rerun-unchanged", "rerun-1pct"} {
		b.Run(fmt.Sprintf("rows=%d/path=pull/%s", rows, mode), func(b *testing.B) {
			// Pebble's defaults (64 MiB memtables), as the service runs.
			ts := openStackWith(b, b.TempDir(), pebble.Options{}, Options{})
			if _, err := ts.svc.CreateConnection(ctx, mysqlConnSpec(b, e, "m", db, nil)); err != nil {
				b.Fatal(err)
			}
			if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "t", Connection: "m", Resource: "t"}); err != nil {
				b.Fatal(err)
			}
			if mode != "full" {
				benchRun(b, ts, "t")
			}
			for b.Loop() {
				if mode == "full" {
					b.StopTimer()
					ts.db.DropDataset(ctx, "t")
					b.StartTimer()
				}
				if mode == "rerun-1pct" {
					b.StopTimer()
					e.exec(b, db, fmt.Sprintf("UPDATE t SET b = b + 1 WHERE id %% 100 = %d", b.N%100))
					b.StartTimer()
				}
				rec := benchRun(b, ts, "t")
				if rec.RowsRead != rows {
					b.Fatalf("read %d", rec.RowsRead)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func benchRun(b *testing.B, ts *testStack, adapter string) RunRecord {
	ctx := context.Background()
	rec, err := ts.svc.StartRun(ctx, adapter, RunOptions{Trigger: "api"})
	if err != nil {
		b.Fatal(err)
	}
	end, err := ts.svc.WaitRun(ctx, rec.ID)
	if err != nil || end.Status != RunSucceeded {
		b.Fatalf("%+v %v", end, err)
	}
	return end
}
