package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestTablesRunOpensTablesAsWritten: a table's writer is opened at its
// first write and released by Finish, so that a run of many tables
// written a few at a time never holds more writers open than tables
// being written; a table left unfinished is finished by Commit, and no
// write follows a Finish. The rows, deletions included (made at Finish),
// read back as written.
func TestTablesRunOpensTablesAsWritten(t *testing.T) {
	ctx := context.Background()
	const tables, atOnce = 12, 3
	var mu sync.Mutex
	var opened, open, maxOpen int64
	hook := func(point string, n int64) {
		if point != "table:opened" && point != "table:finished" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if point == "table:opened" {
			opened++
		}
		open = n
		maxOpen = max(maxOpen, n)
	}
	db := openTestDB(t, newTestStore(t), Options{hook: hook})
	gen := func(g, rows int) []shopTable {
		var out []shopTable
		for k := range tables {
			var rs [][]Value
			for i := int64(1); i <= int64(rows); i++ {
				rs = append(rs, []Value{iv(i), sv(fmt.Sprintf("c%d-%d", k, g))})
			}
			out = append(out, shopTable{TableSpec{Name: fmt.Sprintf("t%02d", k), Schema: ordersSchema, Partitions: 1 + k%2}, rs})
		}
		return out
	}
	run := func(ts []shopTable) VersionInfo {
		t.Helper()
		var opts TablesRunOptions
		for _, tb := range ts {
			opts.Tables = append(opts.Tables, tb.spec)
		}
		tr, err := db.BeginTablesRun(ctx, tablesConfig, opts)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		opened, maxOpen = 0, open
		mu.Unlock()
		if maxOpen != 0 {
			t.Fatalf("%d writers open after the begin", maxOpen)
		}
		errs := make([]error, len(ts))
		sem := make(chan struct{}, atOnce)
		var wg sync.WaitGroup
		for i, tb := range ts {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				w := tr.Table(tb.spec.Name)
				for _, row := range tb.rows {
					if errs[i] = w.Put(ctx, row); errs[i] != nil {
						return
					}
				}
				if i == len(ts)-1 {
					return // Commit finishes it
				}
				if errs[i] = w.Finish(ctx); errs[i] != nil {
					return
				}
				if err := w.Put(ctx, tb.rows[0]); !errors.Is(err, ErrRunClosed) {
					errs[i] = fmt.Errorf("a Put after Finish: %v, want ErrRunClosed", err)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		vi, err := tr.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if opened != tables || maxOpen > atOnce || open != 0 {
			t.Fatalf("%d writers opened, at most %d at once, %d left open; want %d, at most %d, none", opened, maxOpen, open, tables, atOnce)
		}
		return vi
	}
	v1 := run(gen(1, 30))
	checkShop(t, db, v1.Version, gen(1, 30))
	v2 := run(gen(2, 20)) // every row updated, ten of each table deleted
	checkShop(t, db, v2.Version, gen(2, 20))
	checkShop(t, db, v1.Version, gen(1, 30))
	if v2.Stats.Deleted != 10*tables || v2.Stats.Updated != 20*tables {
		t.Fatalf("version 2: %+v", v2.Stats)
	}
}

// TestTablesRunSealedLoadsDropped: the tables new to a dataset (written
// as loads) finished before a commit that fails (the guard of a table
// emptied at the source) leave nothing: no version, no cell visible, no
// SSTable of their loads; the next run, whose tables are finished too,
// commits them all in one flush.
func TestTablesRunSealedLoadsDropped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openTestDB(t, openTestStore(t, dir), Options{})
	run := func(tables []shopTable) (VersionInfo, error) {
		t.Helper()
		var opts TablesRunOptions
		for _, tb := range tables {
			opts.Tables = append(opts.Tables, tb.spec)
		}
		tr, err := db.BeginTablesRun(ctx, tablesConfig, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			w := tr.Table(tb.spec.Name)
			for _, row := range tb.rows {
				if err := w.Put(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Finish(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return tr.Commit(ctx)
	}
	v0, err := run(shop(1)[2:]) // customers alone
	if err != nil {
		t.Fatal(err)
	}
	bad := shop(1)
	bad[2].rows = nil // customers emptied: the guard refuses
	if _, err := run(bad); !errors.Is(err, ErrGuardRefused) || !strings.Contains(err.Error(), "customers") {
		t.Fatalf("a run with a table emptied: %v", err)
	}
	if info, err := db.Dataset(ctx, "shop"); err != nil || info.Current != v0.Version {
		t.Fatalf("after the refused run: %+v %v", info, err)
	}
	if os.Getenv(envBackend) != "hbase" {
		loads, err := filepath.Glob(filepath.Join(dir, "*load-*"))
		if err != nil || len(loads) != 0 {
			t.Fatalf("files of the refused run's loads left: %v %v", loads, err)
		}
	}
	v, err := run(shop(2))
	if err != nil {
		t.Fatal(err)
	}
	checkShop(t, db, v.Version, shop(2))
}
