// Command gen writes a data directory of snapstore's storage format (one
// Pebble directory, as data.tar.gz) and want.json, what the code that
// wrote it read from it: every kept version's rows, point reads and diffs.
// It only uses the public API, so it writes the format of the code it is
// run on; each fixture was made by running it on the commit of its format,
// and is not remade:
//
//	testdata/format1  commit 9d84b50: metadata in rows of their own, one
//	                  store cell per column, store/pebble's bytewise
//	                  comparer
//	testdata/format2  commit d86df69: one metadata row per dataset, one
//	                  store cell per column, the bytewise comparer
//
// TestOpenDataDir opens a copy of each with today's code and checks that
// every kept version still reads the same. To make a fixture:
//
//	git worktree add /tmp/f <commit>
//	cp -r snapshot/testdata/gen /tmp/f/snapshot/testdata/
//	cd /tmp/f && go run ./snapshot/testdata/gen <dir of the fixture>
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/pebble"
)

// want is what want.json holds: per dataset, its kept versions (newest
// first, as Versions lists them), every row of each as JSON, and the diff
// counts between consecutive kept versions.
type want struct {
	Datasets map[string]wantDataset `json:"datasets"`
	Records  map[string]string      `json:"records"`
}

type wantDataset struct {
	Info     snapshot.DatasetInfo          `json:"info"`
	Versions []snapshot.VersionInfo        `json:"versions"`
	Rows     map[string][]json.RawMessage  `json:"rows"`
	Diffs    map[string]snapshot.DiffStats `json:"diffs"`
	// Gets holds, for every seventh row of the scan (rows 0, 7, 14...),
	// what a point read of its key returned.
	Gets map[string][]json.RawMessage `json:"gets"`
}

func main() {
	out := os.Args[1]
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "snapstore-fixture-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	st, err := pebble.Open(data, pebble.Options{})
	if err != nil {
		log.Fatal(err)
	}
	db, err := snapshot.Open(ctx, st, snapshot.Options{})
	if err != nil {
		log.Fatal(err)
	}
	films(ctx, db)
	db.Close()
	st.Close()
	// A second process: datasets of three partitions.
	st, err = pebble.Open(data, pebble.Options{})
	if err != nil {
		log.Fatal(err)
	}
	db, err = snapshot.Open(ctx, st, snapshot.Options{Partitions: 3})
	if err != nil {
		log.Fatal(err)
	}
	parted(ctx, db)
	if err := db.PutRecord(ctx, "connection", "shop", []byte(`{"type":"sqlite"}`)); err != nil {
		log.Fatal(err)
	}
	w := want{Datasets: map[string]wantDataset{}, Records: map[string]string{}}
	dss, err := db.Datasets(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range dss {
		w.Datasets[d.Name] = describe(ctx, db, d)
	}
	rec, err := db.GetRecord(ctx, "connection", "shop")
	if err != nil {
		log.Fatal(err)
	}
	w.Records["connection/shop"] = string(rec)
	db.Close()
	st.Close()
	b, err := json.MarshalIndent(w, "", " ")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "want.json"), append(b, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	tar := exec.Command("tar", "-C", dir, "-czf", filepath.Join(out, "data.tar.gz"), "data")
	tar.Stderr = os.Stderr
	if err := tar.Run(); err != nil {
		log.Fatal(err)
	}
}

func describe(ctx context.Context, db *snapshot.DB, d snapshot.DatasetInfo) wantDataset {
	vs, err := db.Versions(ctx, d.Name)
	if err != nil {
		log.Fatal(err)
	}
	wd := wantDataset{Info: d, Versions: vs, Rows: map[string][]json.RawMessage{}, Diffs: map[string]snapshot.DiffStats{}, Gets: map[string][]json.RawMessage{}}
	for i, v := range vs {
		r, err := db.Reader(ctx, d.Name, snapshot.At{Version: v.Version})
		if err != nil {
			log.Fatal(err)
		}
		it, err := r.Scan(ctx, snapshot.ScanOptions{})
		if err != nil {
			log.Fatal(err)
		}
		rows := []json.RawMessage{}
		gets := []json.RawMessage{}
		for it.Next() {
			row := it.Row()
			rows = append(rows, row.AppendJSON(nil))
			if len(rows)%7 == 1 {
				g, err := r.Get(ctx, row.Key, nil)
				if err != nil {
					log.Fatal(err)
				}
				gets = append(gets, g.AppendJSON(nil))
			}
		}
		if err := it.Close(); err != nil {
			log.Fatal(err)
		}
		r.Close()
		ver := strconv.FormatInt(v.Version, 10)
		wd.Rows[ver] = rows
		wd.Gets[ver] = gets
		if i+1 < len(vs) {
			from := vs[i+1].Version
			ds, err := db.DiffCounts(ctx, d.Name, from, v.Version)
			if err != nil {
				log.Fatal(err)
			}
			wd.Diffs[fmt.Sprintf("%d..%d", from, v.Version)] = ds
		}
	}
	return wd
}

func iv(i int64) snapshot.Value  { return snapshot.Value{Kind: snapshot.KindInt, Int: i} }
func sv(s string) snapshot.Value { return snapshot.Value{Kind: snapshot.KindString, Bytes: []byte(s)} }
func kv(k snapshot.Kind, s string) snapshot.Value {
	return snapshot.Value{Kind: k, Bytes: []byte(s)}
}

var null = snapshot.Value{}

func run(ctx context.Context, db *snapshot.DB, cfg snapshot.DatasetConfig, schema snapshot.Schema, rows [][]snapshot.Value, abort bool) {
	r, err := db.BeginRun(ctx, cfg, snapshot.RunOptions{Schema: schema, Force: true, Source: snapshot.SourceInfo{Adapter: cfg.Name}})
	if err != nil {
		log.Fatal(err)
	}
	for _, vals := range rows {
		if err := r.Put(ctx, vals); err != nil {
			log.Fatal(err)
		}
	}
	if abort {
		if err := r.Abort(ctx, "fixture: an aborted run"); err != nil {
			log.Fatal(err)
		}
		return
	}
	if _, err := r.Commit(ctx); err != nil {
		log.Fatal(err)
	}
}

// films: a composite key (region, id), key and values with 0x00 bytes,
// every kind, updates, deletes, reinserts, an aborted run, a dropped and
// an added column, a tag, and versions expired by GC.
func films(ctx context.Context, db *snapshot.DB) {
	cfg := snapshot.DatasetConfig{Name: "films", Retention: snapshot.Retention{MinVersions: 100}}
	cols := []snapshot.Column{
		{Name: "region", Kind: snapshot.KindString}, {Name: "id", Kind: snapshot.KindInt},
		{Name: "title", Kind: snapshot.KindString}, {Name: "price", Kind: snapshot.KindDecimal},
		{Name: "rating", Kind: snapshot.KindFloat, Nullable: true}, {Name: "released", Kind: snapshot.KindDate},
		{Name: "shown", Kind: snapshot.KindDateTime}, {Name: "len", Kind: snapshot.KindTime},
		{Name: "views", Kind: snapshot.KindUint}, {Name: "poster", Kind: snapshot.KindBytes, Nullable: true},
		{Name: "meta", Kind: snapshot.KindJSON, Nullable: true}, {Name: "note", Kind: snapshot.KindString, Nullable: true},
	}
	schema := snapshot.Schema{Columns: cols, Key: []string{"region", "id"}}
	row := func(region string, id int64, gen int) []snapshot.Value {
		rating := snapshot.Value{Kind: snapshot.KindFloat, Float: float64(id) / 3}
		if id%5 == 0 {
			rating = null
		}
		poster := kv(snapshot.KindBytes, fmt.Sprintf("\x00img%d\x00", id))
		if id%4 == 0 {
			poster = null
		}
		note := sv(fmt.Sprintf("note %d gen %d", id, gen/2))
		if id%3 == 0 {
			note = null
		}
		return []snapshot.Value{
			sv(region), iv(id), sv(fmt.Sprintf("Film %d", id)),
			kv(snapshot.KindDecimal, fmt.Sprintf("%d.%02d", id%50, (id*7+int64(gen))%100)),
			rating, kv(snapshot.KindDate, fmt.Sprintf("20%02d-0%d-1%d", id%30, 1+id%9, id%10)),
			kv(snapshot.KindDateTime, fmt.Sprintf("2025-01-0%d 10:%02d:00", 1+id%9, id%60)),
			kv(snapshot.KindTime, fmt.Sprintf("%d:%02d:00", id%200, id%60)),
			{Kind: snapshot.KindUint, Uint: uint64(id*1000 + int64(gen))},
			poster, kv(snapshot.KindJSON, fmt.Sprintf(`{"g": %d, "tags": ["a", null]}`, gen)), note,
		}
	}
	regions := []string{"eu", "us", "a\x00b", ""}
	gen := func(g int, skip func(region string, id int64) bool) [][]snapshot.Value {
		var rows [][]snapshot.Value
		for _, rg := range regions {
			for id := int64(-3); id < 20; id++ {
				if skip != nil && skip(rg, id) {
					continue
				}
				rows = append(rows, row(rg, id, g))
			}
		}
		return rows
	}
	// Version 1: every row.
	run(ctx, db, cfg, schema, gen(0, nil), false)
	// Version 2: prices and views change (gen 1), ids 5..7 gone in eu.
	run(ctx, db, cfg, schema, gen(1, func(r string, id int64) bool { return r == "eu" && id >= 5 && id <= 7 }), false)
	// An aborted run that changes everything and deletes a region.
	run(ctx, db, cfg, schema, gen(9, func(r string, _ int64) bool { return r == "us" }), true)
	// Version 3: eu 5..7 back, id 19 gone everywhere, notes change.
	run(ctx, db, cfg, schema, gen(2, func(_ string, id int64) bool { return id == 19 }), false)
	if err := db.Tag(ctx, "films", "release", 0); err == nil {
		log.Fatal("tagging version 0 worked")
	}
	vs, _ := db.Versions(ctx, "films")
	if err := db.Tag(ctx, "films", "release", vs[1].Version); err != nil {
		log.Fatal(err)
	}
	// Version 4: column note dropped, column stock added, rows in source
	// order that breaks key order (phase B).
	cols4 := append(append([]snapshot.Column{}, cols[:11]...), snapshot.Column{Name: "stock", Kind: snapshot.KindInt})
	schema4 := snapshot.Schema{Columns: cols4, Key: schema.Key}
	var rows4 [][]snapshot.Value
	for _, r := range gen(3, nil) {
		stock := iv(r[1].Int * 2)
		rows4 = append([][]snapshot.Value{append(append([]snapshot.Value{}, r[:11]...), stock)}, rows4...)
	}
	run(ctx, db, cfg, schema4, rows4, false)
	// Version 5: a few updates.
	var rows5 [][]snapshot.Value
	for _, r := range gen(4, nil) {
		stock := iv(r[1].Int * 2)
		if r[1].Int%6 == 0 {
			stock = iv(-1)
		}
		rows5 = append(rows5, append(append([]snapshot.Value{}, r[:11]...), stock))
	}
	run(ctx, db, cfg, schema4, rows5, false)
	// Keep 2 versions (and the tagged one): version 1 and 3 expire; cells
	// of version 1 that later versions still see stay (G7).
	cfg.Retention = snapshot.Retention{TTL: time.Nanosecond, MinVersions: 2}
	if err := db.SetConfig(ctx, cfg); err != nil {
		log.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if _, err := db.GC(ctx, "films", false); err != nil {
		log.Fatal(err)
	}
	// Version 6 after GC.
	run(ctx, db, snapshot.DatasetConfig{Name: "films", Retention: cfg.Retention}, schema4, rows5[:len(rows5)-10], false)
	// An aborted run left for GC: its cells are in the data directory.
	run(ctx, db, snapshot.DatasetConfig{Name: "films", Retention: cfg.Retention}, schema4, rows4[:20], true)
}

// parted: three hash partitions, two versions, and a dataset whose last
// version is empty.
func parted(ctx context.Context, db *snapshot.DB) {
	cfg := snapshot.DatasetConfig{Name: "parted", Retention: snapshot.Retention{MinVersions: 10}}
	schema := snapshot.Schema{Columns: []snapshot.Column{{Name: "k", Kind: snapshot.KindString}, {Name: "v", Kind: snapshot.KindInt}}, Key: []string{"k"}}
	var rows [][]snapshot.Value
	for i := 0; i < 200; i++ {
		rows = append(rows, []snapshot.Value{sv(fmt.Sprintf("key-%03d", i)), iv(int64(i))})
	}
	run(ctx, db, cfg, schema, rows, false)
	for i := range rows {
		if i%10 == 0 {
			rows[i][1] = iv(-1)
		}
	}
	run(ctx, db, cfg, schema, rows[:190], false)
	run(ctx, db, cfg, schema, rows[50:], true)
	gone := snapshot.DatasetConfig{Name: "gone", Retention: snapshot.Retention{MinVersions: 10}}
	run(ctx, db, gone, schema, rows[:5], false)
	run(ctx, db, gone, schema, nil, false)
}
