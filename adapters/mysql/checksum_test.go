package mysql

import (
	"context"
	"testing"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// TestMySQLChecksumInSnapshot pins what the read modes of checksums.go rely
// on, on the real MariaDB: the chunk checksums inside a reader's
// transaction give the snapshot's values while another session changes
// and commits a row (the new value only to a later reader), and the chunk
// checksum tells NULL from the empty string.
func TestMySQLChecksumInSnapshot(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "cks")
	e.exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10) NULL, n INT NULL)",
		"INSERT INTO t VALUES (1, 'a', 1), (2, '', 2), (3, NULL, 3), (4, 'd', NULL)")
	src := e.openSource(t, db)
	open := func() (source.Checksummer, func()) {
		tr, err := src.OpenTable(ctx, source.TableRequest{Resource: "t"})
		if err != nil {
			t.Fatal(err)
		}
		return tr.(source.Checksummer), func() { tr.Close() }
	}
	r1, close1 := open()
	defer close1()
	if ok, why := r1.Chunkable(); !ok {
		t.Fatal("an INT primary key is not chunkable:", why)
	}
	rows1, crc1, err := r1.ChunkChecksum(ctx, nil, nil)
	if err != nil || rows1 != 4 {
		t.Fatalf("chunk checksum: %d rows, %v", rows1, err)
	}
	// Another session changes a row and commits.
	e.exec(t, db, "UPDATE t SET s = 'changed' WHERE id = 1")
	if rows, crc, err := r1.ChunkChecksum(ctx, nil, nil); err != nil || rows != 4 || crc != crc1 {
		t.Errorf("chunk checksum inside the snapshot after another session's commit: %d %d %v; want %d %d", rows, crc, err, rows1, crc1)
	}
	r2, close2 := open()
	defer close2()
	if _, crc, _ := r2.ChunkChecksum(ctx, nil, nil); crc == crc1 {
		t.Error("a later reader's chunk checksum did not change")
	}
	// NULL and '' differ, as do NULL in one column or another; ranges
	// split the table.
	one := []snapshot.Value{{Kind: snapshot.KindInt, Int: 1}}
	three := []snapshot.Value{{Kind: snapshot.KindInt, Int: 3}}
	_, before, _ := r2.ChunkChecksum(ctx, one, three)
	e.exec(t, db, "UPDATE t SET s = NULL WHERE id = 2", "UPDATE t SET s = '', n = NULL WHERE id = 3")
	r3, close3 := open()
	defer close3()
	rows, after, err := r3.ChunkChecksum(ctx, one, three)
	if err != nil || rows != 2 || after == before {
		t.Errorf("range (1, 3] after swapping NULL and '': %d rows, checksum %d (before %d), %v", rows, after, before, err)
	}
}
