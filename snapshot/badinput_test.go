package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

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
		// Before the dataset was created no version existed: a 404, not
		// the 410 of a collected version.
		{"as of the zero time", func() error { _, err := db.Reader(ctx, "t", At{AsOf: new(time.Time)}); return err }, ErrNoVersion},
		{"as of and version", func() error { _, err := db.Reader(ctx, "t", At{Version: 1, AsOf: new(time.Time)}); return err }, ErrInvalidArgument},
		{"as of before all", func() error { _, err := db.Reader(ctx, "t", At{AsOf: new(time.Unix(1, 0))}); return err }, ErrNoVersion},
		{"unknown tag", func() error { _, err := db.Reader(ctx, "t", At{Tag: "x"}); return err }, ErrTagNotFound},
		{"untag unknown", func() error { return db.Untag(ctx, "t", "x") }, ErrTagNotFound},
		{"tag unkept version", func() error { return db.Tag(ctx, "t", "x", 99) }, ErrVersionNotKept},
		{"bad tag name", func() error { return db.Tag(ctx, "t", "a/b", 1) }, ErrInvalidArgument},
		{"all-digit tag name", func() error { return db.Tag(ctx, "t", "1", 1) }, ErrInvalidArgument},
		{"all-digit tag name, zeros first", func() error { return db.Tag(ctx, "t", "007", 1) }, ErrInvalidArgument},
		{"digits and dashes tag name", func() error { return db.Tag(ctx, "t", "2026-01", 1) }, ErrInvalidArgument},
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

// TestAsOfBeforeFirstVersion: a read as of a time after the dataset was
// created but before its oldest kept version is a 410 that says both what
// may have happened and which version is the oldest kept one; before its
// creation, a 404 saying it did not exist.
func TestAsOfBeforeFirstVersion(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	v := runRows(t, db, [][]Value{{iv(1), sv("a")}}).Version
	info, err := db.Dataset(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	at := info.CreatedAt
	_, err = db.Reader(ctx, "t", At{AsOf: &at})
	if !errors.Is(err, ErrVersionNotKept) || !strings.Contains(err.Error(), "none had been committed by then, or GC collected it") ||
		!strings.Contains(err.Error(), fmt.Sprintf("the oldest kept version, %d,", v)) {
		t.Errorf("as of creation: %v", err)
	}
	before := at.Add(-time.Second)
	if _, err := db.Reader(ctx, "t", At{AsOf: &before}); !errors.Is(err, ErrNoVersion) || !strings.Contains(err.Error(), "t did not exist at") {
		t.Errorf("as of before creation: %v", err)
	}
}
