package adapters

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// TestSkipUnchangedCompositeKeys runs the read modes of checksums.go over
// a table keyed by a text and an integer column, on PostgreSQL and SQLite:
// a first run reads it all, a run with nothing changed verifies it, first
// after a full read and then by the chunks' checksums; a run after changes
// in one chunk and rows appended past the last key reads only those, and
// its version's checksum (snapshot.D6) equals a full read's. Keys of
// text are stored in digests as JSON (digestKey).
func TestSkipUnchangedCompositeKeys(t *testing.T) {
	const rows = 3*digestChunkRows + 77
	// Keys ('k00000', 0) ... in groups of three: the text sorts as the
	// numbers do, and each text has several integers.
	type source struct {
		name string
		conn api.Connection
		exec func(stmts ...string)
	}
	sources := func(t *testing.T) []source {
		var out []source
		if pe := postgresEnv(t); true {
			db := pe.tempDatabase(t, "ckkeys")
			out = append(out, source{"postgres", connSpec(t, pe, "m", db, nil), func(s ...string) { pe.exec(t, db, s...) }})
		}
		path := filepath.Join(t.TempDir(), "keys.db")
		out = append(out, source{"sqlite", api.Connection{Name: "m", Type: "sqlite", Options: map[string]any{"path": path}}, func(s ...string) { sqliteExec(t, path, s...) }})
		return out
	}
	for _, src := range sources(t) {
		t.Run(src.name, func(t *testing.T) {
			ctx := context.Background()
			src.exec("CREATE TABLE t (k VARCHAR(20) NOT NULL, n INTEGER NOT NULL, v TEXT, PRIMARY KEY (k, n))")
			var ins []string
			for i := 0; i < rows; i += 500 {
				q := "INSERT INTO t VALUES "
				for j := i; j < min(i+500, rows); j++ {
					if j > i {
						q += ", "
					}
					q += fmt.Sprintf("('k%05d', %d, 'row %d')", j/3, j%3, j)
				}
				ins = append(ins, q)
			}
			src.exec(ins...)
			ts := newStack(t, Options{})
			if _, err := ts.svc.CreateConnection(ctx, src.conn); err != nil {
				t.Fatal(err)
			}
			for _, a := range []api.Adapter{{Name: "t", Connection: "m", Resource: "t"}, {Name: "full", Connection: "m", Resource: "t", CommitUnchanged: true}} {
				if _, err := ts.svc.CreateAdapter(ctx, a); err != nil {
					t.Fatal(err)
				}
			}
			run := func(what, mode string, verified bool) RunRecord {
				t.Helper()
				rec := loggedRun(t, ts, "t", what)
				if rec.Mode != mode || rec.Verified != verified {
					t.Fatalf("%s: mode %q verified %v, want %q %v", what, rec.Mode, rec.Verified, mode, verified)
				}
				return rec
			}
			first := run("first run", ModeFull, false)
			if first.Stats.Rows != rows || first.Chunks != 4 {
				t.Fatalf("first run: %d rows in %d chunks", first.Stats.Rows, first.Chunks)
			}
			run("nothing changed, read in full", ModeFull, true)
			run("nothing changed, verified by the chunks' checksums", ModeVerify, true)
			src.exec("UPDATE t SET v = 'changed' WHERE k = 'k02000' AND n = 1",
				"DELETE FROM t WHERE k = 'k02001' AND n = 2",
				"INSERT INTO t VALUES ('k99999', 0, 'new'), ('k99999', 1, NULL)")
			rec := run("changes in one chunk and past the last key", ModeChunks, false)
			if st := rec.Stats; st.Updated != 1 || st.Deleted != 1 || st.Inserted != 2 || st.Rows != rows+1 || rec.ChunksSkipped != 2 {
				t.Errorf("chunk run: %+v, %d chunks skipped; want 1 updated, 1 deleted, 2 inserted, 2 skipped", st, rec.ChunksSkipped)
			}
			full := ts.runWait(t, "full")
			mustSucceed(t, full)
			if rec.Stats.Checksum != full.Stats.Checksum {
				t.Errorf("chunk run checksum %s, a full read's %s", rec.Stats.Checksum, full.Stats.Checksum)
			}
			// The chunk run changed two chunks of four, not fewer than half:
			// the next run reads in full, and computes the checksums.
			run("nothing changed after the chunk run", ModeFull, true)
			run("nothing changed again", ModeVerify, true)
		})
	}
}

// TestDigestKeyRoundTrip: every key a digest stores reads back as the same
// values, kinds and payloads exact; one-column integer keys keep their
// decimal text.
func TestDigestKeyRoundTrip(t *testing.T) {
	keys := [][]snapshot.Value{
		{{Kind: snapshot.KindInt, Int: math.MinInt64}},
		{{Kind: snapshot.KindUint, Uint: math.MaxUint64}},
		{{Kind: snapshot.KindString, Bytes: []byte("k\x00\"é")}, {Kind: snapshot.KindInt, Int: 1<<62 + 1}},
		{{Kind: snapshot.KindBytes, Bytes: []byte{0xff, 0}}, {Kind: snapshot.KindDecimal, Bytes: []byte("-12.50")}, {Kind: snapshot.KindUint, Uint: 1<<63 + 1}},
		{{Kind: snapshot.KindString, Bytes: []byte("")}},
	}
	for _, key := range keys {
		idx := make([]int, len(key))
		for i := range idx {
			idx[i] = i
		}
		text := digestKey(key, idx)
		got, err := parseDigestKey(text)
		if err != nil || len(got) != len(key) {
			t.Fatalf("%s: %v %v", text, got, err)
		}
		for i := range key {
			if !got[i].Equal(key[i]) {
				t.Errorf("%s: value %d reads back as %v, want %v", text, i, got[i], key[i])
			}
		}
	}
	if got := digestKey([]snapshot.Value{{Kind: snapshot.KindInt, Int: -5}}, []int{0}); got != "-5" {
		t.Errorf("an integer key's digest text %q", got)
	}
}
