package adapters

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// TestSkipUnchanged runs an adapter over a table of several chunks through
// the read modes of checksums.go: a first run reads it all; a run with
// nothing changed records the version verified (no new version), first
// after reading everything, then with the chunks' checksums alone; a run
// after changes in one key range, rows deleted at a chunk's end and rows
// added past the last key reads only the chunks that changed. Each
// version's checksum (snapshot.D6) equals that of a full read of the same
// source into another dataset, and commit_unchanged keeps one version per
// run.
func TestSkipUnchanged(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "skip")
	const rows = 6*digestChunkRows + 123
	e.exec(t, db, "CREATE TABLE t (id BIGINT UNSIGNED PRIMARY KEY, s VARCHAR(40) NULL, x DOUBLE NULL)",
		fmt.Sprintf("INSERT INTO t SELECT seq, IF(seq %% 7 = 0, NULL, CONCAT('row ', seq)), seq / 3 FROM seq_1_to_%d", rows))
	ts := checksumStack(t, e, db, api.Adapter{Name: "t", Connection: "m", Resource: "t"},
		api.Adapter{Name: "full", Connection: "m", Resource: "t", CommitUnchanged: true})
	// reference is the checksum a full read of the source gives now.
	reference := func() string {
		t.Helper()
		rec := ts.runWait(t, "full")
		mustSucceed(t, rec)
		return rec.Stats.Checksum
	}
	run := func(what string, mode string, verified bool) RunRecord {
		t.Helper()
		rec := loggedRun(t, ts, "t", what)
		if rec.Mode != mode || rec.Verified != verified {
			t.Fatalf("%s: mode %q verified %v, want %q %v", what, rec.Mode, rec.Verified, mode, verified)
		}
		return rec
	}
	first := run("first run", ModeFull, false)
	if first.Stats.Rows != rows || first.Chunks != 7 {
		t.Fatalf("first run: %d rows in %d chunks", first.Stats.Rows, first.Chunks)
	}
	// Nothing changed: a full read finds it and verifies, computing the
	// checksums; then the chunks' checksums alone do.
	second := run("nothing changed, read in full", ModeFull, true)
	third := run("nothing changed, verified by the chunks' checksums", ModeVerify, true)
	if second.Version != first.Version || third.Version != first.Version {
		t.Fatalf("verified runs made versions %d and %d, want %d", second.Version, third.Version, first.Version)
	}
	info, err := ts.db.VersionInfo(ctx, "t", first.Version)
	if err != nil || info.VerifiedAt == nil || info.VerifiedAt.Before(first.Start) {
		t.Fatalf("version %d verified at %v, %v", first.Version, info.VerifiedAt, err)
	}
	if third.Stats.Unchanged != rows || third.Stats.Checksum != first.Stats.Checksum {
		t.Errorf("verified run stats %+v", third.Stats)
	}
	// Changes in the third chunk, the end of the fifth deleted, rows past
	// the last key: chunk mode reads chunks 3, 5 and the last.
	e.exec(t, db,
		fmt.Sprintf("UPDATE t SET s = 'changed' WHERE id BETWEEN %d AND %d", 2*digestChunkRows+10, 2*digestChunkRows+20),
		fmt.Sprintf("DELETE FROM t WHERE id > %d AND id <= %d", 5*digestChunkRows-5, 5*digestChunkRows),
		fmt.Sprintf("INSERT INTO t VALUES (%d, 'new', NULL), (%d, NULL, 1.5)", rows+1, rows+1000))
	fourth := run("changes in three chunks", ModeChunks, false)
	if st := fourth.Stats; st.Updated != 11 || st.Deleted != 5 || st.Inserted != 2 || st.Rows != rows-5+2 || fourth.ChunksSkipped != 4 {
		t.Errorf("chunk run: %+v, %d chunks skipped; want 11 updated, 5 deleted, 2 inserted, 4 skipped", st, fourth.ChunksSkipped)
	}
	if want := reference(); fourth.Stats.Checksum != want {
		t.Errorf("chunk run checksum %s, a full read's %s", fourth.Stats.Checksum, want)
	}
	// The rows read back as the source has them.
	r, err := ts.db.Reader(ctx, "t", snapshot.At{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, id := range []uint64{1, 2*digestChunkRows + 15, 5*digestChunkRows - 5, 5*digestChunkRows - 4, rows + 1000} {
		row, err := r.Get(ctx, []snapshot.Value{{Kind: snapshot.KindUint, Uint: id}}, nil)
		var want string
		e.admin(t, db).QueryRow("SELECT COALESCE(s, 'NULL') FROM t WHERE id = ?", id).Scan(&want)
		switch {
		case want == "" && err == nil:
			t.Errorf("row %d: deleted at the source, read %v", id, row.Values)
		case want != "" && err != nil:
			t.Errorf("row %d: %v", id, err)
		case want != "" && row.Values[1].String() != want:
			t.Errorf("row %d: s %s, source %s", id, row.Values[1].String(), want)
		}
	}
	// commit_unchanged: a version per run.
	before := ts.runWait(t, "full")
	after := ts.runWait(t, "full")
	if after.Verified || after.Version == before.Version {
		t.Errorf("commit_unchanged run: verified %v, version %d after %d", after.Verified, after.Version, before.Version)
	}
}

// TestChecksumsSeeEveryChange makes changes the checksums of checksums.go
// must not miss, each after a run that verified the table, each followed
// by a run whose dataset must then read as the source does: a '#' moved
// from one text column to the next (the texts of the two rows would be
// one without the columns' lengths; CHECKSUM TABLE does not see it
// either), two rows swapping their values (a BIT_XOR of CRC32s cancels
// them), a VIRTUAL column's expression changed (CHECKSUM TABLE leaves it
// out).
func TestChecksumsSeeEveryChange(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "seeall")
	const rows = 3*digestChunkRows + 7
	e.exec(t, db,
		"CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(20) NOT NULL, b VARCHAR(20) NOT NULL, n INT NOT NULL, f FLOAT NULL)",
		fmt.Sprintf("INSERT INTO t SELECT seq, CONCAT('a', seq), CONCAT('b', seq), seq, 0.1 FROM seq_1_to_%d", rows),
		"UPDATE t SET a = 'x#', b = 'y' WHERE id = 10",
		"UPDATE t SET a = 'tea', n = 10 WHERE id = 20",
		"UPDATE t SET a = 'jam', n = 20 WHERE id = 21",
		"CREATE TABLE g (id INT PRIMARY KEY, n INT NOT NULL, v INT AS (n * 2) VIRTUAL)",
		fmt.Sprintf("INSERT INTO g (id, n) SELECT seq, seq FROM seq_1_to_%d", rows))
	ts := checksumStack(t, e, db, api.Adapter{Name: "t", Connection: "m", Resource: "t"}, api.Adapter{Name: "g", Connection: "m", Resource: "g"})
	run := func(adapter, what string) RunRecord {
		t.Helper()
		return loggedRun(t, ts, adapter, what)
	}
	// same checks that every row of the dataset reads as the source's
	// text of the columns does.
	same := func(dataset, what string, cols ...string) {
		t.Helper()
		want := map[int64]string{}
		q := "SELECT id, CONCAT_WS('|', " + strings.Join(cols, ", ") + ") FROM " + dataset
		res, err := e.admin(t, db).QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for res.Next() {
			var id int64
			var text string
			if err := res.Scan(&id, &text); err != nil {
				t.Fatal(err)
			}
			want[id] = text
		}
		res.Close()
		r, err := ts.db.Reader(ctx, dataset, snapshot.At{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		it, err := r.Scan(ctx, snapshot.ScanOptions{Columns: cols})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for it.Next() {
			row := it.Row()
			var parts []string
			for _, v := range row.Values {
				parts = append(parts, v.String())
			}
			if got := strings.Join(parts, "|"); got != want[row.Key[0].Int] {
				t.Errorf("%s: row %d of %s reads %q, the source has %q", what, row.Key[0].Int, dataset, got, want[row.Key[0].Int])
			}
			n++
		}
		if err := it.Close(); err != nil || n != len(want) {
			t.Errorf("%s: %d rows of %s, the source has %d (%v)", what, n, dataset, len(want), err)
		}
	}
	for _, d := range []string{"t", "g"} {
		run(d, d+": first run")
		run(d, d+": nothing changed, read in full")
	}
	verified := func(adapter string) {
		t.Helper()
		if rec := run(adapter, adapter+": nothing changed, verified by the chunks"); rec.Mode != ModeVerify || !rec.Verified {
			t.Fatalf("%s: nothing changed: mode %s, verified %v; want %s", adapter, rec.Mode, rec.Verified, ModeVerify)
		}
	}
	verified("t")

	e.exec(t, db, "UPDATE t SET a = 'x', b = '#y' WHERE id = 10")
	if rec := run("t", "a '#' moved between columns"); rec.Verified || rec.Stats.Updated != 1 {
		t.Errorf("a '#' moved between columns: verified %v, %d updated; want a version with 1 updated", rec.Verified, rec.Stats.Updated)
	}
	same("t", "a '#' moved between columns", "a", "b", "n")

	verified("t")
	e.exec(t, db, "UPDATE t SET a = IF(id = 20, 'jam', 'tea'), n = IF(id = 20, 20, 10) WHERE id IN (20, 21)")
	if rec := run("t", "two rows swapped their values"); rec.Verified || rec.Stats.Updated != 2 {
		t.Errorf("two rows swapped their values: verified %v, %d updated; want a version with 2 updated", rec.Verified, rec.Stats.Updated)
	}
	same("t", "two rows swapped their values", "a", "b", "n")

	verified("g")
	e.exec(t, db, "ALTER TABLE g MODIFY v INT AS (n * 3) VIRTUAL")
	if rec := run("g", "a VIRTUAL column's expression changed"); rec.Verified || rec.Stats.Updated != rows {
		t.Errorf("a VIRTUAL column's expression changed: verified %v, %d updated; want a version with %d updated", rec.Verified, rec.Stats.Updated, rows)
	}
	same("g", "a VIRTUAL column's expression changed", "n", "v")
}

// TestChunksFollowAppends grows a table at its end between runs in chunk
// mode (by a third, so that fewer than half of the chunks change): the keys past the digest's last one are cut into new chunks, each
// with the source's checksum, so the next append reads only the last
// chunk rather than everything appended since the digest was made; every
// version's checksum equals a full read's.
func TestChunksFollowAppends(t *testing.T) {
	e := mysqlEnv(t)
	db := e.tempDatabase(t, "appends")
	const rows = 6*digestChunkRows + 7
	e.exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(20) NOT NULL)",
		fmt.Sprintf("INSERT INTO t SELECT seq, CONCAT('row ', seq) FROM seq_1_to_%d", rows))
	ts := checksumStack(t, e, db, api.Adapter{Name: "t", Connection: "m", Resource: "t"},
		api.Adapter{Name: "full", Connection: "m", Resource: "t", CommitUnchanged: true})
	run := func(what string) RunRecord {
		t.Helper()
		return loggedRun(t, ts, "t", what)
	}
	run("first run")
	run("nothing changed, read in full")
	appendRows := func(from, n int) {
		e.exec(t, db, fmt.Sprintf("INSERT INTO t SELECT seq, CONCAT('new ', seq) FROM seq_%d_to_%d", from, from+n-1))
	}
	appendRows(rows+1, 2*digestChunkRows)
	grown := run("appended two chunks' worth")
	if grown.Mode != ModeChunks || grown.Chunks < 9 || grown.Stats.Inserted != 2*digestChunkRows {
		t.Fatalf("after appending: mode %s, %d chunks, %d inserted; want chunks mode, the tail cut into new chunks", grown.Mode, grown.Chunks, grown.Stats.Inserted)
	}
	appendRows(rows+2*digestChunkRows+1, 100)
	next := run("appended 100 rows")
	if next.Mode != ModeChunks || next.ChunksSkipped != next.Chunks-1 || next.RowsRead > digestChunkRows+100 || next.Stats.Inserted != 100 {
		t.Errorf("the next append: mode %s, %d of %d chunks skipped, %d rows read, %d inserted; want only the last chunk read", next.Mode, next.ChunksSkipped, next.Chunks, next.RowsRead, next.Stats.Inserted)
	}
	ref := ts.runWait(t, "full")
	mustSucceed(t, ref)
	if next.Stats.Checksum != ref.Stats.Checksum {
		t.Errorf("chunk run checksum %s, a full read's %s", next.Stats.Checksum, ref.Stats.Checksum)
	}
}

// checksumStack returns a service with data connection "m" to database db
// of e and the adapters specs.
func checksumStack(t *testing.T, e mysqlTestEnv, db string, specs ...api.Adapter) *testStack {
	t.Helper()
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(context.Background(), connSpec(t, e, "m", db, nil)); err != nil {
		t.Fatal(err)
	}
	for _, a := range specs {
		if _, err := ts.svc.CreateAdapter(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

// loggedRun runs adapter to its end, which must succeed, and logs what it
// read and wrote under what.
func loggedRun(t *testing.T, ts *testStack, adapter, what string) RunRecord {
	t.Helper()
	rec := ts.runWait(t, adapter)
	mustSucceed(t, rec)
	t.Logf("%s: mode %s, verified %v, version %d, chunks %d skipped %d, rows read %d, stats %+v",
		what, rec.Mode, rec.Verified, rec.Version, rec.Chunks, rec.ChunksSkipped, rec.RowsRead, rec.Stats)
	return rec
}

// TestUnsummedDigest gives the current version a digest without the
// chunks' sums, as a partitioned run's coordinator stores it
// (partitioned.go): a run with nothing changed verifies by it, and a run
// after a change in one chunk reads in full rather than carrying chunks
// over with sums it does not have; its checksum is a full read's, and its
// digest lets the next run verify again.
func TestUnsummedDigest(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "nosum")
	const rows = 4*digestChunkRows + 9
	e.exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(40) NOT NULL)",
		fmt.Sprintf("INSERT INTO t SELECT seq, CONCAT('row ', seq) FROM seq_1_to_%d", rows))
	ts := checksumStack(t, e, db, api.Adapter{Name: "t", Connection: "m", Resource: "t"},
		api.Adapter{Name: "full", Connection: "m", Resource: "t", CommitUnchanged: true})
	run := func(what string, mode string, verified bool) RunRecord {
		t.Helper()
		rec := loggedRun(t, ts, "t", what)
		if rec.Mode != mode || rec.Verified != verified {
			t.Fatalf("%s: mode %q verified %v, want %q %v", what, rec.Mode, rec.Verified, mode, verified)
		}
		return rec
	}
	run("first run", ModeFull, false)
	first := run("nothing changed, read in full", ModeFull, true)
	b, err := ts.db.SourceDigest(ctx, "t", first.Version)
	if err != nil || b == nil {
		t.Fatalf("the digest of version %d: %q, %v", first.Version, b, err)
	}
	var d digest
	if err := json.Unmarshal(b, &d); err != nil || !d.Checksums {
		t.Fatalf("the digest of version %d: %s, %v", first.Version, b, err)
	}
	d.Unsummed = true
	for i := range d.Chunks {
		d.Chunks[i].Sum = 0
	}
	if b, err = json.Marshal(d); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.db.Verify(ctx, "t", first.Version, time.Now(), b); err != nil {
		t.Fatal(err)
	}
	run("nothing changed, an unsummed digest", ModeVerify, true)

	e.exec(t, db, fmt.Sprintf("UPDATE t SET s = 'changed' WHERE id = %d", digestChunkRows+7))
	changed := run("a change in one chunk, an unsummed digest", ModeFull, false)
	ref := ts.runWait(t, "full")
	mustSucceed(t, ref)
	if changed.Stats.Updated != 1 || changed.Stats.Rows != rows || changed.Stats.Checksum != ref.Stats.Checksum {
		t.Errorf("the run after a change: %+v, a full read's checksum %s", changed.Stats, ref.Stats.Checksum)
	}
	run("nothing changed after the change", ModeVerify, true)
}
