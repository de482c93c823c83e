package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// benchTable writes the 200k-row table the checksum benchmarks read.
func benchTable(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	sqliteExec(b, path, "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL, d DECIMAL(12,3), e DATETIME, f TEXT)",
		`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 200000)
		INSERT INTO t SELECT n, n % 1000, 'name ' || n, n * 1.37, n / 7.0, '2026-01-02 03:04:05', hex(randomblob(16)) FROM g`)
	return path
}

// BenchmarkSQLiteChecksum200k: one checksum of the whole 200k-row table,
// against BenchmarkSQLiteRead200k, a read of it through the connector.
func BenchmarkSQLiteChecksum200k(b *testing.B) {
	path := benchTable(b)
	ctx := context.Background()
	for b.Loop() {
		_, cs, close := openChecksummer(b, path, "t", 0)
		if rows, _, err := cs.ChunkChecksum(ctx, nil, nil); err != nil || rows != 200000 {
			b.Fatal(rows, err)
		}
		close()
	}
}

func BenchmarkSQLiteRead200k(b *testing.B) {
	path := benchTable(b)
	ctx := context.Background()
	for b.Loop() {
		tr, _, close := openChecksummer(b, path, "t", 0)
		n := 0
		for tr.Next(ctx) {
			n++
		}
		if tr.Err() != nil || n != 200000 {
			b.Fatal(n, tr.Err())
		}
		close()
	}
}
