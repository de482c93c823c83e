package snapshot

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/snapstore/snapstore/store"
)

// TestDatadriven runs the scripts in testdata/ (regenerate expected output
// with -rewrite). Commands:
//
//	run [dataset=t] [columns=id:int,name:string] [key=id] [force] [allow-empty]
//	    [max-shrink=F] [abort] [crash] [partitions=N]
//	        one source row per input line, values separated by spaces,
//	        NULL for NULL; crash closes the store without ending the run
//	        and reopens everything
//	scan|get [dataset=t] [version=N|tag=X|as-of=DURATION] [key=...] [columns=a,b]
//	        [limit=N] [start=..] [end=..] [prefix=..] [pages]
//	diff from=N to=M [counts]
//	gc [dry]    rollback to=N    tag name=X version=N    untag name=X
//	retention [ttl=DURATION] [min=N]    advance DURATION (the fake clock)
//	versions    cells (raw cells of every partition)    txns
//	reopen [partitions=N] (Options.Partitions for new datasets)    drop
func TestDatadriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasPrefix(path, filepath.Join("testdata", "format")) || strings.HasPrefix(path, filepath.Join("testdata", "gen")) {
			return // store fixtures and their generator (migrate_test.go, datadir_test.go), not scripts
		}
		h := newDDHarness(t)
		datadriven.RunTest(t, path, h.cmd)
	})
}

type ddHarness struct {
	t     *testing.T
	dir   string
	st    store.Store
	db    *DB
	clock time.Time
	cfg   DatasetConfig
	parts int
	dead  map[string]bool // owners of crashed DBs
}

func newDDHarness(t *testing.T) *ddHarness {
	h := &ddHarness{t: t, dir: t.TempDir(), clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), parts: 1, dead: map[string]bool{}}
	h.cfg = DatasetConfig{Name: "t"}
	h.open()
	return h
}

func (h *ddHarness) open() {
	h.st = openTestStore(h.t, filepath.Join(h.dir))
	// No grace before pruning (G6): nothing here writes late; the fault
	// tests (faults_test.go) check the grace.
	db, err := Open(context.Background(), h.st, Options{Partitions: h.parts, now: func() time.Time { return h.clock }, batchSize: 1, pruneGrace: -1, deadOwners: h.dead})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { db.Close() })
	h.db = db
}

func (h *ddHarness) reopen(closeDB bool) {
	if closeDB {
		h.db.Close()
	} else {
		// A crash: nothing more written; the next process knows the dead
		// one is gone (as it would by its slots' expiry, W1).
		h.db.crash()
		h.dead[h.db.owner] = true
	}
	h.st.Close()
	h.open()
}

func arg(d *datadriven.TestData, key, def string) string {
	if a, ok := d.Arg(key); ok {
		if len(a.Vals) == 0 {
			return ""
		}
		return strings.Join(a.Vals, ",")
	}
	return def
}

func parseSchema(cols, key string) (Schema, error) {
	var s Schema
	for _, c := range strings.Split(cols, ",") {
		name, kind, _ := strings.Cut(c, ":")
		var k Kind
		if err := k.UnmarshalText([]byte(kind)); err != nil {
			return s, err
		}
		s.Columns = append(s.Columns, Column{Name: name, Kind: k})
	}
	s.Key = strings.Split(key, ",")
	return s, nil
}

func parseRow(s Schema, line string) ([]Value, error) {
	f := strings.Fields(line)
	if len(f) != len(s.Columns) {
		return nil, fmt.Errorf("%d fields for %d columns", len(f), len(s.Columns))
	}
	vals := make([]Value, len(f))
	for i, x := range f {
		if x == "NULL" {
			continue
		}
		v, err := ParseValue(s.Columns[i].Kind, x)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

func errText(err error) string { return "error: " + err.Error() + "\n" }

func (h *ddHarness) cmd(t *testing.T, d *datadriven.TestData) string {
	ctx := context.Background()
	ds := arg(d, "dataset", "t")
	switch d.Cmd {
	case "run":
		s, err := parseSchema(arg(d, "columns", "id:int,name:string"), arg(d, "key", "id"))
		if err != nil {
			return errText(err)
		}
		cfg := h.cfg
		cfg.Name = ds
		cfg.Guard.AllowEmpty = d.HasArg("allow-empty")
		if x := arg(d, "max-shrink", ""); x != "" {
			cfg.Guard.MaxShrink, _ = strconv.ParseFloat(x, 64)
		}
		r, err := h.db.BeginRun(ctx, cfg, RunOptions{Schema: s, Force: d.HasArg("force")})
		if err != nil {
			return errText(err)
		}
		var out strings.Builder
		for _, line := range strings.Split(d.Input, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			vals, err := parseRow(s, line)
			if err == nil {
				err = r.Put(ctx, vals)
			}
			if err != nil {
				fmt.Fprintf(&out, "put %q: %v\n", line, err)
			}
		}
		switch {
		case d.HasArg("crash"):
			h.db.crash()
			h.reopen(false)
			fmt.Fprintf(&out, "txn %d crashed; reopened\n", r.TxnID())
		case d.HasArg("abort"):
			if err := r.Abort(ctx, "test"); err != nil {
				return errText(err)
			}
			fmt.Fprintf(&out, "txn %d aborted\n", r.TxnID())
		default:
			vi, err := r.Commit(ctx)
			if err != nil {
				fmt.Fprintf(&out, "txn %d: %v\n", r.TxnID(), err)
				break
			}
			st := vi.Stats
			fmt.Fprintf(&out, "version %d: rows=%d inserted=%d updated=%d deleted=%d unchanged=%d\n",
				vi.Version, st.Rows, st.Inserted, st.Updated, st.Deleted, st.Unchanged)
		}
		return out.String()
	case "scan", "get":
		at := At{Tag: arg(d, "tag", "")}
		at.Version, _ = strconv.ParseInt(arg(d, "version", "0"), 10, 64)
		if x := arg(d, "as-of", ""); x != "" {
			dur, err := time.ParseDuration(x)
			if err != nil {
				return errText(err)
			}
			at.AsOf = new(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(dur))
		}
		r, err := h.db.Reader(ctx, ds, at)
		if err != nil {
			return errText(err)
		}
		defer r.Close()
		var cols []string
		if x := arg(d, "columns", ""); x != "" {
			cols = strings.Split(x, ",")
		}
		var out strings.Builder
		fmt.Fprintf(&out, "@%d\n", r.Version().Version)
		if d.Cmd == "get" {
			key, err := r.ParseKey(strings.Split(arg(d, "key", ""), ","))
			if err != nil {
				return errText(err)
			}
			row, err := r.Get(ctx, key, cols)
			if err != nil {
				return out.String() + errText(err)
			}
			b, _ := row.MarshalJSON()
			return out.String() + string(b) + "\n"
		}
		opts := ScanOptions{Columns: cols}
		opts.Limit, _ = strconv.Atoi(arg(d, "limit", "0"))
		for _, kv := range []struct {
			name string
			dst  *[]Value
		}{{"start", &opts.Start}, {"end", &opts.End}, {"prefix", &opts.Prefix}} {
			if x := arg(d, kv.name, ""); x != "" {
				parts := strings.Split(x, ",")
				for i, p := range parts {
					v, err := ParseValue(r.Version().Schema.Columns[r.keyIdx[i]].Kind, p)
					if err != nil {
						return errText(err)
					}
					*kv.dst = append(*kv.dst, v)
				}
			}
		}
		for page := 1; ; page++ {
			it, err := r.Scan(ctx, opts)
			if err != nil {
				return out.String() + errText(err)
			}
			for it.Next() {
				b, _ := it.Row().MarshalJSON()
				out.Write(b)
				out.WriteByte('\n')
			}
			if err := it.Close(); err != nil {
				return out.String() + errText(err)
			}
			opts.PageToken = it.NextPageToken()
			if !d.HasArg("pages") || opts.PageToken == "" {
				break
			}
			fmt.Fprintf(&out, "-- page %d\n", page+1)
		}
		return out.String()
	case "diff":
		from, _ := strconv.ParseInt(arg(d, "from", "0"), 10, 64)
		to, _ := strconv.ParseInt(arg(d, "to", "0"), 10, 64)
		if d.HasArg("counts") {
			st, err := h.db.DiffCounts(ctx, ds, from, to)
			if err != nil {
				return errText(err)
			}
			return fmt.Sprintf("inserted=%d updated=%d deleted=%d\n", st.Inserted, st.Updated, st.Deleted)
		}
		it, err := h.db.Diff(ctx, ds, from, to)
		if err != nil {
			return errText(err)
		}
		var out strings.Builder
		for it.Next() {
			c := it.Change()
			fmt.Fprintf(&out, "%s %v", c.Op, c.Key)
			if c.Before != nil {
				b, _ := c.Before.MarshalJSON()
				fmt.Fprintf(&out, " before=%s", b)
			}
			if c.After != nil {
				b, _ := c.After.MarshalJSON()
				fmt.Fprintf(&out, " after=%s", b)
			}
			if d.HasArg("changed") && (c.Changed != nil || c.Op == OpUpdate) {
				fmt.Fprintf(&out, " changed=%v", c.Changed)
			}
			out.WriteByte('\n')
		}
		if err := it.Close(); err != nil {
			return out.String() + errText(err)
		}
		return out.String()
	case "gc":
		rep, err := h.db.GC(ctx, ds, d.HasArg("dry"))
		if err != nil {
			return errText(err)
		}
		return fmt.Sprintf("dry=%v expired=%v cells_deleted=%d of_invalid=%d invalid_pruned=%d\n", rep.DryRun, rep.VersionsExpired, rep.CellsDeleted, rep.CellsOfInvalidTxns, rep.InvalidTxnsPruned)
	case "rollback":
		to, _ := strconv.ParseInt(arg(d, "to", "0"), 10, 64)
		vi, err := h.db.Rollback(ctx, ds, to)
		if err != nil {
			return errText(err)
		}
		st := vi.Stats
		return fmt.Sprintf("version %d restored_from=%d: rows=%d inserted=%d updated=%d deleted=%d unchanged=%d checksum=%s\n",
			vi.Version, vi.RestoredFrom, st.Rows, st.Inserted, st.Updated, st.Deleted, st.Unchanged, st.Checksum)
	case "tag", "untag":
		v, _ := strconv.ParseInt(arg(d, "version", "0"), 10, 64)
		var err error
		if d.Cmd == "tag" {
			err = h.db.Tag(ctx, ds, arg(d, "name", ""), v)
		} else {
			err = h.db.Untag(ctx, ds, arg(d, "name", ""))
		}
		if err != nil {
			return errText(err)
		}
		return "ok\n"
	case "retention":
		if x := arg(d, "ttl", ""); x != "" {
			h.cfg.Retention.TTL, _ = time.ParseDuration(x)
		}
		h.cfg.Retention.MinVersions, _ = strconv.Atoi(arg(d, "min", "0"))
		cfg := h.cfg
		cfg.Name = ds
		if err := h.db.SetConfig(ctx, cfg); err != nil {
			return errText(err)
		}
		return "ok\n"
	case "advance":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			return errText(err)
		}
		h.clock = h.clock.Add(dur)
		return fmt.Sprintf("now +%s\n", h.clock.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	case "versions":
		vs, err := h.db.Versions(ctx, ds)
		if err != nil {
			return errText(err)
		}
		var out strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&out, "%d committed=+%s rows=%d", v.Version, v.CommittedAt.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), v.Stats.Rows)
			if v.Current {
				out.WriteString(" current")
			}
			if v.RestoredFrom != 0 {
				fmt.Fprintf(&out, " restored_from=%d", v.RestoredFrom)
			}
			if len(v.Tags) > 0 {
				fmt.Fprintf(&out, " tags=%v", v.Tags)
			}
			out.WriteByte('\n')
		}
		return out.String()
	case "cells":
		return h.cells(ds)
	case "txns":
		return fmt.Sprintf("invalid=%v in-progress=%v\n", invalidIDs(h.db, ds), inProgressIDs(h.db, ds))
	case "reopen":
		if x := arg(d, "partitions", ""); x != "" {
			h.parts, _ = strconv.Atoi(x)
		}
		h.reopen(true)
		return "ok\n"
	case "drop":
		if err := h.db.DropDataset(ctx, ds); err != nil {
			return errText(err)
		}
		return "ok\n"
	}
	t.Fatalf("unknown command %q", d.Cmd)
	return ""
}

// cells dumps every cell of a dataset, rows decoded only as hex: each row
// version split into its columns (logicalCells).
func (h *ddHarness) cells(ds string) string {
	cells, err := logicalCells(h.db, ds)
	if err != nil {
		return errText(err)
	}
	var lines []string
	for _, c := range cells {
		s := fmt.Sprintf("%x %s@%d %s", c.row, c.column, c.ts, c.kind)
		if c.kind == store.KindPut {
			s += " " + c.value.String()
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n") + "\n"
}
