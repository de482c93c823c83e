package server

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
)

// recordingCache wraps the store's real block cache (store/pebble) and
// records the reservations made through it.
type recordingCache struct {
	inner store.CacheReserver
	mu    sync.Mutex
	made  []int64 // the n of each reservation
	held  int     // reservations not yet released
}

func (r *recordingCache) ReserveCache(n int64) func() {
	release := r.inner.ReserveCache(n)
	r.mu.Lock()
	r.made = append(r.made, n)
	r.held++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.held--
			r.mu.Unlock()
			release()
		})
	}
}

// take returns the reservations made since the last call and how many
// are still held.
func (r *recordingCache) take() ([]int64, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	made := r.made
	r.made = nil
	return made, r.held
}

// TestExportReservesCache: an Arrow stream or a Parquet file longer than
// one batch, of rows or of a diff, reserves exportMemory of the store's
// block cache while it is written and releases it at its end; a page, an
// answer of one batch or less, or a JSON scan reserve nothing.
func TestExportReservesCache(t *testing.T) {
	rc := &recordingCache{}
	f := newFixture(t, fixtureOpts{cache: func(c store.CacheReserver) store.CacheReserver { rc.inner = c; return rc }})
	ctx := context.Background()
	schema := snapshot.Schema{Columns: []snapshot.Column{
		{Name: "id", Kind: snapshot.KindInt, SourceType: "int"},
		{Name: "name", Kind: snapshot.KindString, SourceType: "text"}}, Key: []string{"id"}}
	for version := range 2 {
		run, err := f.db.BeginRun(ctx, snapshot.DatasetConfig{Name: "big"}, snapshot.RunOptions{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2*arrowBatchRows + 10 {
			name := "n"
			if version == 1 {
				name = "changed" // every row: a diff of more than one batch
			}
			if err := run.Put(ctx, []snapshot.Value{{Kind: snapshot.KindInt, Int: int64(i)}, {Kind: snapshot.KindString, Bytes: []byte(name)}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := run.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path    string
		reserve bool
	}{
		{"/v1/datasets/big/rows?format=arrow", true},
		{"/v1/datasets/big/rows?format=parquet", true},
		{"/v1/datasets/big/diff?format=arrow", true},
		{"/v1/datasets/big/diff?format=parquet", true},
		{"/v1/datasets/big/rows?format=arrow&limit=100", false},
		{"/v1/datasets/big/rows?format=parquet&limit=10000", false},
		{"/v1/datasets/big/rows?format=arrow&limit=20000", true},
		{"/v1/datasets/big/rows?format=ndjson", false},
		{"/v1/datasets/big/rows?limit=1000", false},
	} {
		f.must(200, "GET", c.path, "")
		made, held := rc.take()
		if held != 0 {
			t.Errorf("%s: %d reservations still held after the answer", c.path, held)
		}
		switch {
		case c.reserve && (len(made) != 1 || made[0] != exportMemory):
			t.Errorf("%s: reservations %v, want one of %d", c.path, made, exportMemory)
		case !c.reserve && len(made) != 0:
			t.Errorf("%s: reservations %v, want none", c.path, made)
		}
	}
}

// TestStreamLimit: a stream's limit may pass a JSON page's 10000 rows
// (its memory is one batch whatever the limit); a JSON page's may not.
func TestStreamLimit(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	schema := snapshot.Schema{Columns: []snapshot.Column{{Name: "id", Kind: snapshot.KindInt, SourceType: "int"}}, Key: []string{"id"}}
	run, err := f.db.BeginRun(ctx, snapshot.DatasetConfig{Name: "n"}, snapshot.RunOptions{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12000 {
		if err := run.Put(ctx, []snapshot.Value{{Kind: snapshot.KindInt, Int: int64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"ndjson", "csv", "arrow", "parquet"} {
		r := f.must(200, "GET", "/v1/datasets/n/rows?limit=11000&format="+format, "")
		var rows int64
		switch format {
		case "ndjson":
			rows = int64(bytes.Count(r.body, []byte("\n")))
		case "csv":
			rows = int64(bytes.Count(r.body, []byte("\n"))) - 1 // the header line
		default:
			tbl := readArrowTable(t, format, r.body)
			rows = tbl.NumRows()
			tbl.Release()
		}
		if rows != 11000 {
			t.Errorf("%s with limit 11000: %d rows", format, rows)
		}
	}
	f.wantProblem(400, "bad_request", "limit", "GET", "/v1/datasets/n/rows?limit=11000", "")
}
