package snapshot

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBadInput checks that bad caller input gets the documented sentinel
// and never a panic.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	runRows(t, db, [][]Value{{iv(1), sv("a")}, {iv(2), sv("b")}})
	r, err := db.Reader(ctx, "t", At{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	good := RunOptions{Schema: testSchema}
	cases := []struct {
		name string
		fn   func() error
		want error
	}{
		{"unknown dataset reader", func() error { _, err := db.Reader(ctx, "nope", At{}); return err }, ErrDatasetNotFound},
		{"unknown dataset info", func() error { _, err := db.Dataset(ctx, "nope"); return err }, ErrDatasetNotFound},
		{"unknown dataset versions", func() error { _, err := db.Versions(ctx, "nope"); return err }, ErrDatasetNotFound},
		{"unknown dataset gc", func() error { _, err := db.GC(ctx, "nope", true); return err }, ErrDatasetNotFound},
		{"unknown dataset drop", func() error { return db.DropDataset(ctx, "nope") }, ErrDatasetNotFound},
		{"unknown dataset diff", func() error { _, err := db.Diff(ctx, "nope", 1, 1); return err }, ErrDatasetNotFound},
		{"set config unknown", func() error { return db.SetConfig(ctx, DatasetConfig{Name: "nope"}) }, ErrDatasetNotFound},
		{"two selectors", func() error { _, err := db.Reader(ctx, "t", At{Version: 1, Tag: "x"}); return err }, ErrInvalidArgument},
		{"negative version", func() error { _, err := db.Reader(ctx, "t", At{Version: -1}); return err }, ErrInvalidArgument},
		{"version not kept", func() error { _, err := db.Reader(ctx, "t", At{Version: 99}); return err }, ErrVersionNotKept},
		{"as of the zero time", func() error { _, err := db.Reader(ctx, "t", At{AsOf: new(time.Time)}); return err }, ErrVersionNotKept},
		{"as of and version", func() error { _, err := db.Reader(ctx, "t", At{Version: 1, AsOf: new(time.Time)}); return err }, ErrInvalidArgument},
		{"as of before all", func() error { _, err := db.Reader(ctx, "t", At{AsOf: new(time.Unix(1, 0))}); return err }, ErrVersionNotKept},
		{"unknown tag", func() error { _, err := db.Reader(ctx, "t", At{Tag: "x"}); return err }, ErrTagNotFound},
		{"untag unknown", func() error { return db.Untag(ctx, "t", "x") }, ErrTagNotFound},
		{"tag unkept version", func() error { return db.Tag(ctx, "t", "x", 99) }, ErrVersionNotKept},
		{"bad tag name", func() error { return db.Tag(ctx, "t", "a/b", 1) }, ErrInvalidArgument},
		{"rollback unkept", func() error { _, err := db.Rollback(ctx, "t", 99); return err }, ErrVersionNotKept},
		{"diff unkept", func() error { _, err := db.Diff(ctx, "t", 1, 99); return err }, ErrVersionNotKept},
		{"diff zero", func() error { _, err := db.DiffCounts(ctx, "t", 0, 1); return err }, ErrInvalidArgument},
		{"bad dataset name", func() error { _, err := db.BeginRun(ctx, DatasetConfig{Name: "a b"}, good); return err }, ErrInvalidArgument},
		{"empty dataset name", func() error { _, err := db.BeginRun(ctx, DatasetConfig{}, good); return err }, ErrInvalidArgument},
		{"bad max shrink", func() error {
			_, err := db.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 2}}, good)
			return err
		}, ErrInvalidArgument},
		{"no key", func() error {
			_, err := db.BeginRun(ctx, DatasetConfig{Name: "u"}, RunOptions{Schema: Schema{Columns: testSchema.Columns}})
			return err
		}, ErrBadSchema},
		{"key not a column", func() error {
			_, err := db.BeginRun(ctx, DatasetConfig{Name: "u"}, RunOptions{Schema: Schema{Columns: testSchema.Columns, Key: []string{"x"}}})
			return err
		}, ErrBadSchema},
		{"duplicate column", func() error {
			s := Schema{Columns: []Column{{Name: "a", Kind: KindInt}, {Name: "a", Kind: KindInt}}, Key: []string{"a"}}
			_, err := db.BeginRun(ctx, DatasetConfig{Name: "u"}, RunOptions{Schema: s})
			return err
		}, ErrBadSchema},
		{"key changed", func() error {
			s := Schema{Columns: testSchema.Columns, Key: []string{"name"}}
			_, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, RunOptions{Schema: s})
			return err
		}, ErrKeyChanged},
		{"parse key count", func() error { _, err := r.ParseKey([]string{"1", "2"}); return err }, ErrBadKey},
		{"parse key value", func() error { _, err := r.ParseKey([]string{"x"}); return err }, ErrBadKey},
		{"get wrong kind", func() error { _, err := r.Get(ctx, []Value{sv("1")}, nil); return err }, ErrBadKey},
		{"get null key", func() error { _, err := r.Get(ctx, []Value{{}}, nil); return err }, ErrBadKey},
		{"get no key", func() error { _, err := r.Get(ctx, nil, nil); return err }, ErrBadKey},
		{"get missing", func() error { _, err := r.Get(ctx, []Value{iv(9)}, nil); return err }, ErrRowNotFound},
		{"get unknown column", func() error { _, err := r.Get(ctx, []Value{iv(1)}, []string{"zz"}); return err }, ErrInvalidArgument},
		{"scan bad token", func() error { _, err := r.Scan(ctx, ScanOptions{PageToken: "!!"}); return err }, ErrBadPageToken},
		{"scan other version token", func() error {
			_, err := r.Scan(ctx, ScanOptions{PageToken: pageToken{dataset: "t", version: 99, lastKey: []byte{1}}.encode()})
			return err
		}, ErrBadPageToken},
		{"scan other dataset token", func() error {
			_, err := r.Scan(ctx, ScanOptions{PageToken: pageToken{dataset: "u", version: r.Version().Version, lastKey: []byte{1}}.encode()})
			return err
		}, ErrBadPageToken},
		{"decode other dataset token", func() error {
			_, err := DecodePageToken("u", pageToken{dataset: "t", version: 1, lastKey: []byte{1}}.encode())
			return err
		}, ErrBadPageToken},
		{"decode bad token", func() error { _, err := DecodePageToken("t", "!!"); return err }, ErrBadPageToken},
		{"scan negative limit", func() error { _, err := r.Scan(ctx, ScanOptions{Limit: -1}); return err }, ErrInvalidArgument},
		{"scan too long prefix", func() error { _, err := r.Scan(ctx, ScanOptions{Prefix: []Value{iv(1), iv(2)}}); return err }, ErrBadKey},
		{"record not found", func() error { _, err := db.GetRecord(ctx, "k", "n"); return err }, ErrRecordNotFound},
		{"record empty kind", func() error { return db.PutRecord(ctx, "", "n", nil) }, ErrInvalidArgument},
		{"record NUL name", func() error { return db.PutRecord(ctx, "k", "a\x00b", nil) }, ErrInvalidArgument},
		{"nil store", func() error { _, err := Open(ctx, nil, Options{}); return err }, ErrInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.fn(); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}

	// A run: bad rows are refused, the run goes on.
	run, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, good); !errors.Is(err, ErrRunInProgress) {
		t.Fatalf("second run: %v", err)
	}
	if err := db.DropDataset(ctx, "t"); !errors.Is(err, ErrRunInProgress) {
		t.Fatalf("drop during run: %v", err)
	}
	if _, err := db.GC(ctx, "t", false); !errors.Is(err, ErrRunInProgress) {
		t.Fatalf("gc during run: %v", err)
	}
	for _, bad := range []struct {
		vals []Value
		want error
	}{
		{[]Value{iv(1)}, ErrInvalidArgument},
		{[]Value{{}, sv("x")}, ErrBadKey},
		{[]Value{sv("1"), sv("x")}, ErrBadSchema},
		{[]Value{iv(1), iv(2)}, ErrBadSchema},
		{[]Value{{Kind: 200}, sv("x")}, ErrBadSchema},
	} {
		if err := run.Put(ctx, bad.vals); !errors.Is(err, bad.want) {
			t.Errorf("put %v: %v, want %v", bad.vals, err, bad.want)
		}
	}
	if err := run.Put(ctx, []Value{iv(1), sv("a")}); err != nil {
		t.Fatal(err)
	}
	if err := run.Put(ctx, []Value{iv(2), sv("b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := run.Put(ctx, []Value{iv(3), sv("c")}); !errors.Is(err, ErrRunClosed) {
		t.Fatalf("put after commit: %v", err)
	}
	if _, err := run.Commit(ctx); !errors.Is(err, ErrRunClosed) {
		t.Fatalf("commit after commit: %v", err)
	}
	if err := run.Abort(ctx, "late"); err != nil {
		t.Fatalf("abort after commit: %v", err)
	}
	// Closed DB.
	db.Close()
	if _, err := db.Reader(ctx, "t", At{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if _, err := r.Get(ctx, []Value{iv(1)}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("reader after close: %v", err)
	}
}

// TestReadsDuringRun checks D8 and D2: readers run while a run writes,
// and see only the pinned version; GC keeps what an open Reader needs.
func TestReadsDuringRun(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{batchSize: 16})
	var rows [][]Value
	for i := 0; i < 500; i++ {
		rows = append(rows, []Value{iv(int64(i)), sv("v1")})
	}
	v1 := runRows(t, db, rows)
	r1, err := db.Reader(ctx, "t", At{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.BeginRun(ctx, DatasetConfig{Name: "t", Retention: Retention{TTL: time.Nanosecond}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				got := scanJSON(t, r1)
				if len(got) != 500 || got[0] != `{"id":0,"name":"v1"}` {
					errc <- errors.New("reader saw something else than version 1")
					return
				}
			}
		}()
	}
	for i := 0; i < 500; i += 3 { // a third of the rows, changed
		if err := run.Put(ctx, []Value{iv(int64(i)), sv("v2")}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if _, err := run.Commit(ctx); !errors.Is(err, ErrGuardRefused) {
		t.Fatalf("shrink by two thirds: %v", err)
	}
	run, _ = db.BeginRun(ctx, DatasetConfig{Name: "t", Retention: Retention{TTL: time.Nanosecond}, Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	for i := 0; i < 500; i += 3 {
		run.Put(ctx, []Value{iv(int64(i)), sv("v2")})
	}
	v2, err := run.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Version 1 expires, but r1 pins it: GC must leave its cells.
	rep, err := db.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.VersionsExpired) != 1 || rep.VersionsExpired[0] != v1.Version {
		t.Fatalf("expired %v", rep.VersionsExpired)
	}
	if got := scanJSON(t, r1); len(got) != 500 || got[499] != `{"id":499,"name":"v1"}` {
		t.Fatalf("pinned reader lost version 1 to GC: %d rows", len(got))
	}
	if _, err := db.Reader(ctx, "t", At{Version: v1.Version}); !errors.Is(err, ErrVersionNotKept) {
		t.Fatalf("new reader at expired version: %v", err)
	}
	r1.Close()
	rep, err = db.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.CellsDeleted == 0 {
		t.Fatal("nothing collected once the reader closed")
	}
	r2, _ := db.Reader(ctx, "t", At{})
	defer r2.Close()
	if got := scanJSON(t, r2); len(got) != 167 || r2.Version().Version != v2.Version {
		t.Fatalf("current after GC: %d rows", len(got))
	}
}

// TestRecords checks the Record methods.
func TestRecords(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	db := openTestDB(t, st, Options{})
	for _, n := range []string{"b", "a", "c"} {
		if err := db.PutRecord(ctx, "conn", n, []byte("v-"+n)); err != nil {
			t.Fatal(err)
		}
	}
	db.PutRecord(ctx, "connx", "z", []byte("other kind"))
	db.PutRecord(ctx, "conn", "e", nil)
	if err := db.DeleteRecord(ctx, "conn", "c"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRecord(ctx, "conn", "absent"); err != nil {
		t.Fatal(err)
	}
	recs, err := db.ListRecords(ctx, "conn")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range recs {
		names = append(names, r.Name+"="+string(r.Value))
	}
	if want := "a=v-a b=v-b e="; joinSpace(names) != want {
		t.Fatalf("records %q, want %q", joinSpace(names), want)
	}
	v, err := db.GetRecord(ctx, "conn", "e")
	if err != nil || v == nil || len(v) != 0 {
		t.Fatalf("empty record: %q %v", v, err)
	}
	// Records survive a reopen.
	db.Close()
	db2 := openTestDB(t, st, Options{})
	if v, err := db2.GetRecord(ctx, "conn", "b"); err != nil || string(v) != "v-b" {
		t.Fatalf("after reopen: %q %v", v, err)
	}
}

func joinSpace(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// TestMetricsReopen checks that a DB registers its metrics and can be
// reopened with the same Registerer.
func TestMetricsReopen(t *testing.T) {
	reg := prometheus.NewRegistry()
	st := newTestStore(t)
	for i := 0; i < 2; i++ {
		db, err := Open(context.Background(), st, Options{Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		runRows(t, db, [][]Value{{iv(int64(i)), sv("a")}})
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
		for _, n := range []string{"snapstore_snapshot_runs_total", "snapstore_snapshot_cells_written_total", "snapstore_txn_invalid_transactions", "snapstore_snapshot_readers_open"} {
			if !names[n] {
				t.Errorf("metric %s missing", n)
			}
		}
		db.Close()
	}
}

// TestStatsLive checks that Stats may be read from another goroutine
// while Put runs (run with -race), and is exact once the run ended.
func TestStatsLive(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	run, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last int64
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := run.Stats().Rows; n < last {
				t.Error("live rows went down")
			} else {
				last = n
			}
		}
	}()
	for i := 0; i < 5000; i++ {
		if err := run.Put(ctx, []Value{iv(int64(i)), sv("x")}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	vi, err := run.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Stats(); got != vi.Stats || got.Rows != 5000 {
		t.Fatalf("final stats %+v, commit said %+v", got, vi.Stats)
	}
}
