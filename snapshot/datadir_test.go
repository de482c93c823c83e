package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/snapstore/snapstore/store/pebble"
)

// dataDirWant is testdata/format<N>/want.json: what the code that wrote
// the fixture (tests/fixtures/snapshot-datadir) read from it.
type dataDirWant struct {
	Datasets map[string]struct {
		Versions []VersionInfo                `json:"versions"`
		Rows     map[string][]json.RawMessage `json:"rows"`
		Diffs    map[string]DiffStats         `json:"diffs"`
		Gets     map[string][]json.RawMessage `json:"gets"`
	} `json:"datasets"`
	Records map[string]string `json:"records"`
}

// untarDataDir unpacks the data directory of fixture (testdata/<fixture>)
// into a new temporary directory and returns its path.
func untarDataDir(t *testing.T, fixture string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("tar", "-C", dir, "-xzf", filepath.Join("testdata", fixture, "data.tar.gz")).CombinedOutput()
	if err != nil {
		t.Fatalf("untar: %v: %s", err, out)
	}
	return filepath.Join(dir, "data")
}

func readDataDirWant(t *testing.T, fixture string) dataDirWant {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", fixture, "want.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w dataDirWant
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestOpenDataDir opens data directories written by earlier storage
// formats (docs/storage-format.md), each made by an earlier snapstore with
// the same program (tests/fixtures/snapshot-datadir): format 1 (metadata in rows of
// their own, one cell per column) and format 2 (one metadata row per
// dataset, one cell per column). Open migrates each to format 3, and every
// kept version reads as that snapstore read it: versions, rows, point
// reads, diffs and records; then a run, GC and a reopen on top of it keep
// them, and the store records format 3.
func TestOpenDataDir(t *testing.T) {
	for _, fixture := range []string{"format1", "format2"} {
		t.Run(fixture, func(t *testing.T) { testOpenDataDir(t, fixture) })
	}
}

func testOpenDataDir(t *testing.T, fixture string) {
	ctx := context.Background()
	dir := untarDataDir(t, fixture)
	want := readDataDirWant(t, fixture)
	st, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkDataDir(t, db, want)
	for _, name := range []string{"films", "parted", "gone"} {
		ds, err := db.lookup(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		ds.mu.Lock()
		f, left := ds.st.Format, ds.st.ColumnTablesLeft
		ds.mu.Unlock()
		if f != metaFormat || left {
			t.Fatalf("%s after Open: format %d, column tables left %v", name, f, left)
		}
	}
	if f, err := db.checkFormat(ctx); err != nil || f != metaFormat {
		t.Fatalf("store format after Open: %d, %v", f, err)
	}

	// A run on top of the old data compares with it, and GC keeps what
	// the kept versions read.
	vs, err := db.Versions(ctx, "parted")
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "parted", Retention: Retention{MinVersions: 10}}, RunOptions{Schema: vs[0].Schema})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 190; i++ {
		v := int64(i)
		if i%10 == 0 {
			v = -1
		}
		if i == 3 {
			v = 333
		}
		if err := r.Put(ctx, []Value{sv(fmt.Sprintf("key-%03d", i)), iv(v)}); err != nil {
			t.Fatal(err)
		}
	}
	vi, err := r.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := vi.Stats; st.Updated != 1 || st.Unchanged != 189 || st.Inserted != 0 || st.Deleted != 0 {
		t.Fatalf("run on migrated data: %+v, want 1 updated and 189 unchanged", st)
	}
	// GC with retention that keeps every version: it removes the cells of
	// the aborted runs and nothing any version reads.
	for _, name := range []string{"films", "parted", "gone"} {
		if err := db.SetConfig(ctx, DatasetConfig{Name: name, Retention: Retention{MinVersions: 100}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.GC(ctx, name, false); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	st.Close()

	st, err = pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err = Open(ctx, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The new version is there, and the old ones still read the same.
	got, err := db.Versions(ctx, "parted")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Version != vi.Version {
		t.Fatalf("after reopen: current %d, want %d", got[0].Version, vi.Version)
	}
	want.Datasets["parted"].Versions[0].Current = false
	checkDataDir(t, db, want)
}

// checkDataDir compares what db reads with want.
func checkDataDir(t *testing.T, db *DB, want dataDirWant) {
	t.Helper()
	ctx := context.Background()
	for name, wd := range want.Datasets {
		vs, err := db.Versions(ctx, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		byVersion := map[int64]VersionInfo{}
		for _, v := range vs {
			byVersion[v.Version] = v
		}
		for _, wv := range wd.Versions {
			v, ok := byVersion[wv.Version]
			if !ok {
				t.Fatalf("%s: version %d missing; have %v", name, wv.Version, vs)
			}
			if v.Stats != wv.Stats || !slices.Equal(v.Tags, wv.Tags) || !sameSchema(v.Schema, wv.Schema) {
				t.Errorf("%s version %d: got %+v, want %+v", name, wv.Version, v, wv)
			}
			ver := strconv.FormatInt(wv.Version, 10)
			r, err := db.Reader(ctx, name, At{Version: wv.Version})
			if err != nil {
				t.Fatalf("%s version %d: %v", name, wv.Version, err)
			}
			it, err := r.Scan(ctx, ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var rows [][]byte
			var keys [][]Value
			for it.Next() {
				rows = append(rows, it.Row().AppendJSON(nil))
				if len(rows)%7 == 1 {
					keys = append(keys, slices.Clone(it.Row().Key))
				}
			}
			if err := it.Close(); err != nil {
				t.Fatalf("%s version %d: %v", name, wv.Version, err)
			}
			if len(rows) != len(wd.Rows[ver]) {
				t.Errorf("%s version %d: %d rows, want %d", name, wv.Version, len(rows), len(wd.Rows[ver]))
			}
			for i := range min(len(rows), len(wd.Rows[ver])) {
				if !bytes.Equal(rows[i], compactJSON(t, wd.Rows[ver][i])) {
					t.Errorf("%s version %d row %d:\n got %s\nwant %s", name, wv.Version, i, rows[i], compactJSON(t, wd.Rows[ver][i]))
				}
			}
			if len(keys) != len(wd.Gets[ver]) {
				t.Errorf("%s version %d: %d point reads, want %d", name, wv.Version, len(keys), len(wd.Gets[ver]))
			}
			for i := range min(len(keys), len(wd.Gets[ver])) {
				got, err := r.Get(ctx, keys[i], nil)
				if err != nil {
					t.Errorf("%s version %d get %v: %v", name, wv.Version, keys[i], err)
					continue
				}
				if !bytes.Equal(got.AppendJSON(nil), compactJSON(t, wd.Gets[ver][i])) {
					t.Errorf("%s version %d get %v: got %s, want %s", name, wv.Version, keys[i], got.AppendJSON(nil), compactJSON(t, wd.Gets[ver][i]))
				}
			}
			r.Close()
		}
		for span, wdiff := range wd.Diffs {
			got, err := db.DiffCounts(ctx, name, wdiff.From, wdiff.To)
			if err != nil {
				t.Fatalf("%s diff %s: %v", name, span, err)
			}
			if got != wdiff {
				t.Errorf("%s diff %s: got %+v, want %+v", name, span, got, wdiff)
			}
		}
	}
	for kn, wv := range want.Records {
		kind, name, _ := bytes.Cut([]byte(kn), []byte("/"))
		got, err := db.GetRecord(ctx, string(kind), string(name))
		if err != nil || string(got) != wv {
			t.Errorf("record %s: %q, %v; want %q", kn, got, err, wv)
		}
	}
}

func compactJSON(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
